// Command testkeyprog is built by TestDealTestThresholdRefusedOutsideTests:
// an ordinary program (not a test binary) that asks paillier for a
// 1024-bit test key. It prints the outcome; the test wants a refusal.
package main

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"os"

	"github.com/dplearn/dplearn/paillier"
)

func main() {
	p, _ := new(big.Int).SetString(os.Args[1], 0)
	q, _ := new(big.Int).SetString(os.Args[2], 0)
	if _, _, err := paillier.DealTestThreshold(rand.Reader, p, q, 3, 2); err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Println("dealt")
}
