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
	if c := p.Get(600); cap(c) != 640 {
		t.Errorf("Get(600): cap %d, want 640 (a class of its own)", cap(c))
	}
	if c := p.Get(1000); cap(c) != 1024 || &c[0] != &b[0] {
		t.Errorf("Get(1000) after a Put of a 1 KiB buffer: cap %d, same memory %v", cap(c), cap(c) == 1024 && &c[0] == &b[0])
	}
	for size, want := range map[int]int{1: 16, 16: 16, 17: 20, 1025: 1280, 64<<10 + 1: 80 << 10, 1<<20 + 1: 5 << 18, 1<<30 - 1: 1 << 30} {
		if c := p.Get(size); len(c) != size || cap(c) != want {
			t.Errorf("Get(%d): len %d cap %d, want cap %d", size, len(c), cap(c), want)
		}
	}
	p.Put(make([]byte, 1500)) // not from Get: filed under 1280
	if c := p.Get(1100); cap(c) != 1280 {
		t.Errorf("Get(1100) after a Put of 1500 bytes: cap %d, want 1280", cap(c))
	}
	p.Put(nil)
	p.Put(make([]byte, 15)) // below the smallest class: dropped
	for range 3 {
		p.Put(make([]byte, 512<<10))
	}
	if p.idle != 1<<20 {
		t.Errorf("pool keeps %d idle bytes, want its limit of %d", p.idle, 1<<20)
	}
}

// TestPoolClasses checks every class: Get's capacity is the smallest class
// at or above the size, at most a quarter more, and Put files a capacity
// under the largest class at or below it.
func TestPoolClasses(t *testing.T) {
	if c := classAbove(poolMaxSize - 1); c >= poolClasses || classCap(c) != poolMaxSize {
		t.Errorf("the largest size Get pools gets class %d, %d bytes; want the 1 GiB class", c, classCap(c))
	}
	for capacity, want := range map[int]int{poolMaxSize: classAbove(poolMaxSize - 1), poolMaxSize + 1: classAbove(poolMaxSize - 1), 2 * poolMaxSize: -1, 15: -1, 0: -1} {
		if got := putClass(capacity); got != want {
			t.Errorf("putClass(%d) = %d, want %d", capacity, got, want)
		}
	}
	for c := range poolClasses {
		size := classCap(c)
		if c > 0 && size <= classCap(c-1) {
			t.Fatalf("class %d holds %d bytes, not more than class %d's %d", c, size, c-1, classCap(c-1))
		}
		if classBelow(size) != c || classAbove(size) != c || classBelow(size+1) != c {
			t.Errorf("class %d (%d bytes): classBelow %d, classAbove %d, classBelow(+1) %d", c, size, classBelow(size), classAbove(size), classBelow(size+1))
		}
		if c > 0 && (classAbove(size-1) != c || classBelow(size-1) != c-1) {
			t.Errorf("%d bytes: classAbove %d, classBelow %d, want %d and %d", size-1, classAbove(size-1), classBelow(size-1), c, c-1)
		}
		if c > 0 && 4*size > 5*(classCap(c-1)+1) {
			t.Errorf("class %d (%d bytes) is more than a quarter above %d", c, size, classCap(c-1)+1)
		}
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
