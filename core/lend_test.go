package core

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"testing"
)

// TestReadLent reads files of known size into lent buffers that fit, are
// too small or nil, and files of unknown size (get is not asked).
func TestReadLent(t *testing.T) {
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, size := range []int{0, 1, 100, 70_000} {
		name := fmt.Sprintf("f%d", size)
		want := bytes.Repeat([]byte("abcdefg"), size/7+1)[:size]
		if err := r.WriteFile(name, want, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, lend := range []int{-1, 0, size - 1, size, size + 10} {
			var lent []byte
			var asked []int
			get := func(n int) []byte {
				asked = append(asked, n)
				if lend >= 0 {
					lent = bytes.Repeat([]byte{0xEE}, lend)
				}
				return lent
			}
			got, err := readLent(sizedOnly{openOnly{r: r}, 0}, name, 0, get)
			if err != nil || !bytes.Equal(got, want) || len(asked) != 1 || asked[0] != size {
				t.Errorf("readLent(size %d, lent %d) = %d bytes, %v; asked %v", size, lend, len(got), err, asked)
			}
			if size > 0 && lend >= size && &got[0] != &lent[0] {
				t.Errorf("readLent(size %d) did not use a lent buffer of %d", size, lend)
			}
			asked = nil
			got, err = readLent(openOnly{r: r}, name, 0, get)
			if err != nil || !bytes.Equal(got, want) || len(asked) != 0 {
				t.Errorf("readLent(size %d) of a file of unknown size = %d bytes, %v; asked %v", size, len(got), err, asked)
			}
		}
	}
	if _, err := readLent(openOnly{r: r}, "missing", 0, func(int) []byte { panic("asked") }); !os.IsNotExist(err) {
		t.Errorf("readLent of a missing file: %v", err)
	}
}

func TestBufferPool(t *testing.T) {
	p := NewBufferPool(1 << 20)
	for _, size := range []int{0, -1, 1 << 30} {
		if b := p.Get(size); b != nil {
			t.Errorf("Get(%d) = %d bytes, want nil", size, cap(b))
		}
	}
	b := p.Get(1000)
	if len(b) != 1000 || cap(b) != 1024 {
		t.Fatalf("Get(1000): len %d cap %d, want 1000 and 1024", len(b), cap(b))
	}
	p.Put(b[:10])
	if c := p.Get(600); cap(c) != 1024 || &c[0] != &b[0] {
		t.Errorf("Get(600) after a Put of a 1 KiB buffer: cap %d, same memory %v", cap(c), cap(c) == 1024 && &c[0] == &b[0])
	}
	if c := p.Get(1025); cap(c) != 2048 {
		t.Errorf("Get(1025): cap %d, want 2048", cap(c))
	}
	p.Put(make([]byte, 1500)) // not from Get: filed under 1 KiB
	if c := p.Get(1024); cap(c) != 1024 {
		t.Errorf("Get(1024) after a Put of 1500 bytes: cap %d, want 1024", cap(c))
	}
	p.Put(nil)
	for range 3 {
		p.Put(make([]byte, 512<<10))
	}
	if p.idle != 1<<20 {
		t.Errorf("pool keeps %d idle bytes, want its limit of %d", p.idle, 1<<20)
	}
}

// TestBufferPoolConcurrent lends and returns from several goroutines (for
// -race) and checks that no buffer is handed out twice at once.
func TestBufferPoolConcurrent(t *testing.T) {
	p := NewBufferPool(1 << 20)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				b := p.Get(100 + i%3000)
				for j := range b {
					b[j] = byte(g)
				}
				for j := range b {
					if b[j] != byte(g) {
						t.Errorf("a buffer was shared while lent")
						return
					}
				}
				p.Put(b)
			}
		}()
	}
	wg.Wait()
}
