package tlsconf

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"
)

// Reloader serves a tls.Config built from Options and rebuilds it when the
// key, trust or password files change, so that new connections use new
// certificates without a restart; connections already open keep theirs.
// A rebuild that fails (a half-written file, a wrong password) is logged
// and the previous configuration stays in use. Safe for concurrent use.
type Reloader struct {
	opts Options
	log  *slog.Logger
	cur  atomic.Pointer[tls.Config]
	// sum is the digest of the watched files behind cur; owned by the
	// goroutine running Run after New returns.
	sum [sha256.Size]byte
}

// NewReloader builds the first configuration; its error is Build's. notes
// are Build's notes, for the caller to log.
func NewReloader(opts Options, logger *slog.Logger) (*Reloader, []string, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{opts: opts, log: logger}
	r.sum = r.digest()
	cfg, notes, err := Build(opts)
	if err != nil {
		return nil, nil, err
	}
	r.cur.Store(cfg)
	return r, notes, nil
}

// Config returns the current configuration.
func (r *Reloader) Config() *tls.Config { return r.cur.Load() }

// ServerConfig returns a tls.Config for tls.Server whose handshakes use
// the configuration current when each starts.
func (r *Reloader) ServerConfig() *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return r.cur.Load(), nil
	}}
}

// Run checks the files every interval until ctx ends.
func (r *Reloader) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.Check()
		}
	}
}

// Check rebuilds the configuration if a watched file changed since the
// last build, and reports whether it installed a new one. Only Run's
// goroutine (or a test, instead of Run) may call it.
func (r *Reloader) Check() bool {
	sum := r.digest()
	if sum == r.sum {
		return false
	}
	cfg, notes, err := Build(r.opts)
	if err != nil {
		r.log.Warn("TLS key or trust store changed but does not load; keeping the previous certificates", "err", err)
		return false
	}
	for _, n := range notes {
		r.log.Warn(n)
	}
	r.sum = sum
	r.cur.Store(cfg)
	r.log.Info("TLS key or trust store reloaded", "keystore", r.opts.KeyStore.Path, "truststore", r.opts.TrustStore.Path)
	return true
}

// digest hashes the contents of the watched files (a missing file hashes
// as empty): comparing contents, not modification times, sees a file
// replaced within the file system's time granularity.
func (r *Reloader) digest() [sha256.Size]byte {
	h := sha256.New()
	for _, p := range []string{r.opts.KeyStore.Path, r.opts.KeyStore.PasswordPath, r.opts.TrustStore.Path, r.opts.TrustStore.PasswordPath} {
		io.WriteString(h, p)
		h.Write([]byte{0})
		if p == "" {
			continue
		}
		if f, err := os.Open(p); err == nil {
			io.Copy(h, io.LimitReader(f, maxStoreSize+1))
			f.Close()
		}
		h.Write([]byte{0})
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
