package syncbuf

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites: 8 goroutines × 100 writes all arrive whole (run
// with -race, this is also the data-race check).
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				fmt.Fprintf(&b, "g%d\n", g)
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 || len(b.Bytes()) != 800*3 {
		t.Fatalf("%d lines, %d bytes; want 800 lines of 3 bytes", n, len(b.Bytes()))
	}
}

func ExampleBuffer() {
	var b Buffer
	fmt.Fprint(&b, "progress: 3/10 jobs")
	fmt.Println(b.String())
	// Output: progress: 3/10 jobs
}
