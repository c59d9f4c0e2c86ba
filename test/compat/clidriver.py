#!/usr/bin/python3
"""Drive an interactive ZooKeeper command-line client from a script.

Used for the Java zkCli (zkCli.sh) and the C client (cli_mt). The script is
line oriented:

    # comment
    $ <command>     write <command> to the client's stdin
    > <regex>       wait until a later line of the client's normal output
                    matches (ordered: the search resumes after the last match)
    ~ <regex>       the same, on the stream of watch/session event lines
    ! <regex>       no output line may match (checked once the client exited)

Lines that match --event are event lines (kept apart, in arrival order, so a
callback thread printing late cannot reorder the main transcript); lines that
match --drop and blank lines are discarded. Everything else is the main
output.

The transcript printed on stdout has three parts: the main output, the
events, and one line per check (`ok` or `FAIL`). The runner normalizes it
(zxids, session ids, times, ports) before comparing two servers. The exit
status is 0 only if every check passed.

    clidriver.py --script S --event RE --drop RE [--wait SEC] -- CMD ARGS...
"""

import argparse
import queue
import re
import subprocess
import sys
import threading
import time


class Stream:
    """Lines of one kind (main output or events) with an ordered cursor."""

    def __init__(self):
        self.lines = []
        self.cursor = 0

    def find(self, pattern):
        """Return the first line at or after the cursor matching pattern."""
        for i in range(self.cursor, len(self.lines)):
            if pattern.search(self.lines[i]):
                self.cursor = i + 1
                return self.lines[i]
        return None


class Client:
    """The client process, its output split into main lines and events."""

    def __init__(self, argv, event_re, drop_re):
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.event_re = event_re
        self.drop_re = drop_re
        self.incoming = queue.Queue()
        self.main = Stream()
        self.events = Stream()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            self.incoming.put(raw.rstrip("\r\n"))
        self.incoming.put(None)

    def pump(self, timeout):
        """Move lines that arrived into the streams; False once EOF."""
        try:
            line = self.incoming.get(timeout=timeout)
        except queue.Empty:
            return True
        while True:
            if line is None:
                return False
            self._classify(line)
            try:
                line = self.incoming.get_nowait()
            except queue.Empty:
                return True

    def _classify(self, line):
        if not line.strip() or (self.drop_re and self.drop_re.search(line)):
            return
        if self.event_re and self.event_re.search(line):
            self.events.lines.append(line)
        else:
            self.main.lines.append(line)

    def send(self, command):
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def expect(self, stream, pattern, wait):
        """Wait up to wait seconds for a matching line on stream."""
        deadline = time.monotonic() + wait
        alive = True
        while True:
            found = stream.find(pattern)
            if found is not None:
                return found
            left = deadline - time.monotonic()
            if left <= 0 or not alive:
                return None
            alive = self.pump(min(left, 0.2))

    def finish(self, wait):
        """Close stdin, wait for the client to exit, drain its output."""
        try:
            self.proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and self.pump(0.2):
            pass


def parse_script(path):
    steps = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            kind, _, arg = line.partition(" ")
            if kind not in ("$", ">", "~", "!"):
                raise SystemExit(f"{path}:{number}: unknown step {kind!r}")
            if kind != "$":
                try:
                    re.compile(arg)
                except re.error as err:
                    raise SystemExit(f"{path}:{number}: bad regex: {err}")
            steps.append((number, kind, arg))
    return steps


def run(args):
    steps = parse_script(args.script)
    event_re = re.compile(args.event) if args.event else None
    drop_re = re.compile(args.drop) if args.drop else None
    client = Client(args.command, event_re, drop_re)
    checks = []
    forbidden = []
    for number, kind, arg in steps:
        if kind == "$":
            client.send(arg)
            continue
        if kind == "!":
            forbidden.append((number, arg))
            continue
        stream = client.main if kind == ">" else client.events
        found = client.expect(stream, re.compile(arg), args.wait)
        if found is None:
            checks.append(f"FAIL line {number}: {kind} {arg}  (no such line within {args.wait}s)")
        else:
            checks.append(f"ok   {kind} {arg}")
    client.finish(args.wait)
    every = client.main.lines + client.events.lines
    for number, arg in forbidden:
        pattern = re.compile(arg)
        hits = [line for line in every if pattern.search(line)]
        if hits:
            checks.append(f"FAIL line {number}: ! {arg}  (found: {hits[0]})")
        else:
            checks.append(f"ok   ! {arg}")
    print("== output")
    for line in client.main.lines:
        print("| " + line)
    print("== events")
    for line in client.events.lines:
        print("| " + line)
    print("== checks")
    for line in checks:
        print(line)
    return 1 if any(c.startswith("FAIL") for c in checks) else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", required=True)
    parser.add_argument("--event", default="")
    parser.add_argument("--drop", default="")
    parser.add_argument("--wait", type=float, default=10.0)
    parser.add_argument("command", nargs="+")
    sys.exit(run(parser.parse_args()))


if __name__ == "__main__":
    main()
