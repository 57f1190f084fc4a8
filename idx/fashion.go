package idx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// DebianFashionMNIST is where the Debian package dataset-fashion-mnist
// installs Fashion-MNIST (apt-get install dataset-fashion-mnist).
const DebianFashionMNIST = "/usr/share/datasets/fashion-mnist"

// FashionMNISTClasses names the ten Fashion-MNIST labels 0-9.
var FashionMNISTClasses = []string{
	"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
}

// ErrNoFashionMNIST reports that the Fashion-MNIST files are not where they
// were looked for.
var ErrNoFashionMNIST = errors.New("idx: Fashion-MNIST not found (install the Debian package dataset-fashion-mnist, or pass the directory holding train-images-idx3-ubyte[.gz] and the three other files)")

// FashionMNIST reads Fashion-MNIST (Xiao, Rasul & Vollgraf 2017; MIT
// licence) from dir, or from DebianFashionMNIST when dir is "": 60,000
// training and 10,000 test images of 28×28 pixels in [0, 1], labels 0-9
// (FashionMNISTClasses). Each of the four files may be gzip-compressed
// (NAME.gz, as Debian ships them) or not (NAME). A missing file is an error
// wrapping ErrNoFashionMNIST.
func FashionMNIST(dir string) (train, test *Set, err error) {
	if dir == "" {
		dir = DebianFashionMNIST
	}
	read := func(prefix string) (*Set, error) {
		im, err := find(dir, prefix+"-images-idx3-ubyte")
		if err != nil {
			return nil, err
		}
		lb, err := find(dir, prefix+"-labels-idx1-ubyte")
		if err != nil {
			return nil, err
		}
		s, err := ReadSet(im, lb)
		if err != nil {
			return nil, err
		}
		if s.Images.Rows != 28 || s.Images.Cols != 28 {
			return nil, fmt.Errorf("%w: %s has %d×%d images, Fashion-MNIST's are 28×28", ErrShape, im, s.Images.Rows, s.Images.Cols)
		}
		for i, l := range s.Labels {
			if l >= len(FashionMNISTClasses) {
				return nil, fmt.Errorf("%w: %s: label %d is %d, Fashion-MNIST has 10 classes", ErrShape, lb, i, l)
			}
		}
		return s, nil
	}
	if train, err = read("train"); err != nil {
		return nil, nil, err
	}
	if test, err = read("t10k"); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// find returns dir/name.gz or dir/name, whichever exists.
func find(dir, name string) (string, error) {
	for _, p := range []string{filepath.Join(dir, name+".gz"), filepath.Join(dir, name)} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("%w: no %s[.gz] in %s", ErrNoFashionMNIST, name, dir)
}
