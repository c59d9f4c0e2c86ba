package server

// joinFrames copies frames into one buffer, for a single write.
func joinFrames(frames [][]byte) []byte {
	size := 0
	for _, f := range frames {
		size += len(f)
	}
	buf := make([]byte, 0, size)
	for _, f := range frames {
		buf = append(buf, f...)
	}
	return buf
}

// unwritten returns what is left of frames after their first n bytes were
// written: the frames not reached, the first of them cut to its unwritten
// part. It reuses frames' backing array.
func unwritten(frames [][]byte, n int) [][]byte {
	for i, f := range frames {
		if n < len(f) {
			frames[i] = f[n:]
			return frames[i:]
		}
		n -= len(f)
	}
	return nil
}
