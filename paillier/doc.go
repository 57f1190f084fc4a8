// Package paillier implements the Paillier cryptosystem and threshold Paillier.
package paillier
