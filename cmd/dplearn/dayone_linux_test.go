//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOutputDestinations: a regular file is replaced atomically, keeping
// its mode; a symbolic link keeps being one; a FIFO, a device and anything
// reached through /proc are written through, never replaced.
func TestOutputDestinations(t *testing.T) {
	dir := t.TempDir()
	inode := func(p string) uint64 {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}

	// Existing regular file with mode 0600: replaced (new inode), mode kept.
	reg := filepath.Join(dir, "reg.txt")
	if err := os.WriteFile(reg, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := inode(reg)
	if err := writeOutput(reg, nil, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(reg); readFile(t, reg) != "new" || st.Mode().Perm() != 0o600 || inode(reg) == before {
		t.Fatalf("regular file: %q mode %v, inode changed %v", readFile(t, reg), st.Mode(), inode(reg) != before)
	}

	// Symbolic link to a regular file: the link stays, its target changes.
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink("reg.txt", link); err != nil {
		t.Fatal(err)
	}
	if err := writeOutput(link, nil, []byte("via link")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 || readFile(t, reg) != "via link" {
		t.Fatalf("link replaced or target not written: %v %v", st.Mode(), err)
	}

	// A symbolic link to /proc/self/fd/N of an open regular file: written
	// through the descriptor (same inode), the link kept.
	f, err := os.CreateTemp(dir, "fd")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fdLink := filepath.Join(dir, "fdlink")
	if err := os.Symlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), fdLink); err != nil {
		t.Fatal(err)
	}
	before = inode(f.Name())
	if err := writeOutput(fdLink, nil, []byte("through fd")); err != nil {
		t.Fatal(err)
	}
	if readFile(t, f.Name()) != "through fd" || inode(f.Name()) != before {
		t.Fatalf("/proc/self/fd target: %q", readFile(t, f.Name()))
	}
	if st, err := os.Lstat(fdLink); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("fd link replaced: %v", err)
	}

	// A FIFO behind a symbolic link: written through, both kept.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	fifoLink := filepath.Join(dir, "fifolink")
	if err := os.Symlink(fifo, fifoLink); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		r, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		defer r.Close()
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	if err := writeOutput(fifoLink, nil, []byte("through fifo")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through fifo" {
		t.Fatalf("FIFO read %q", s)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("FIFO replaced: %v", err)
	}

	// /dev/null: written through, still a device.
	if err := writeOutput("/dev/null", nil, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a device: %v", err)
	}
	// "-" is the command's stdout; a directory is refused.
	var buf bytes.Buffer
	if err := writeOutput("-", &buf, []byte("std")); err != nil || buf.String() != "std" {
		t.Fatalf("stdout: %q %v", buf.String(), err)
	}
	if err := writeOutput(dir, nil, []byte("x")); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("directory: %v", err)
	}
}

// TestPredictDevStdout runs predict --out /dev/stdout with descriptor 1
// pointing at a regular file, the case where /dev/stdout resolves to a
// regular file: as root, an atomic rename would have replaced /dev/stdout
// (or that file) with a new regular file. The predictions must arrive
// through the descriptor and /dev/stdout must be what it was. As a normal
// user the rename would fail instead, so the written-through bytes are the
// part of the test that matters there.
func TestPredictDevStdout(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 200)
	model := fitWage(t, dir, data, writeFile(t, dir, "schema.json", wageSchema))
	devBefore, err := os.Lstat("/dev/stdout")
	if err != nil {
		t.Skipf("no /dev/stdout: %v", err)
	}
	sink, err := os.CreateTemp(dir, "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	saved, err := syscall.Dup(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Dup3(int(sink.Fd()), 1, 0); err != nil {
		t.Fatal(err)
	}
	msg, runErr := runCLI(t, "predict", "--model", model, "--data", data, "--out", "/dev/stdout")
	if err := syscall.Dup3(saved, 1, 0); err != nil {
		t.Fatal(err)
	}
	syscall.Close(saved)
	if runErr != nil {
		t.Fatal(runErr)
	}
	devAfter, err := os.Lstat("/dev/stdout")
	if err != nil || devAfter.Mode().Type() != devBefore.Mode().Type() || devAfter.Mode().IsRegular() {
		t.Fatalf("/dev/stdout was %v, is now %v (%v)", devBefore.Mode(), devAfter, err)
	}
	// Read through the descriptor, not the name: a file renamed over the
	// name would not be what descriptor 1 points at.
	got, err := io.ReadAll(io.NewSectionReader(sink, 0, 1<<30))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	if len(lines) != 201 || lines[0] != "row,wage_predicted" {
		t.Fatalf("predictions through the descriptor: %d lines, %q", len(lines), lines[0])
	}
	if msg != "" {
		t.Errorf("messages went to stdout, into the predictions: %q", msg)
	}
	t.Logf("ran as uid %d", os.Getuid())
}
