package zab

import (
	"bufio"
	"bytes"
	"testing"
)

// BenchmarkReadInform reads INFORM packets of a 100-byte setData-sized
// transaction back to back, as the observer's main loop does.
func BenchmarkReadInform(b *testing.B) {
	one := EncodePacket(&Packet{Type: Inform, Zxid: 0x100000001, Data: append(txnBytes(0x100000001, 1, 1, 5), make([]byte, 120)...)})
	stream := bytes.Repeat(one, 1000)
	b.SetBytes(int64(len(one)))
	b.ReportAllocs()
	r := bufio.NewReaderSize(bytes.NewReader(stream), 64<<10)
	for i := 0; b.Loop(); i++ {
		if i%1000 == 0 {
			r.Reset(bytes.NewReader(stream))
		}
		if _, err := ReadPacket(r, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
