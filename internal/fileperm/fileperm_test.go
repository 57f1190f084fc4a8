package fileperm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFileRule: ReadFile applies the rule to each case, and every
// refusal names its fix. Cases: modes of the file and of its directory,
// private or not, a symbolic link leading into an open directory, and
// (as root only) a file and a directory owned by another user.
func TestReadFileRule(t *testing.T) {
	type setup func(t *testing.T, dir, file string)
	chmod := func(p func(dir, file string) string, m os.FileMode) setup {
		return func(t *testing.T, dir, file string) {
			if err := os.Chmod(p(dir, file), m); err != nil {
				t.Fatal(err)
			}
		}
	}
	theDir := func(dir, _ string) string { return dir }
	theFile := func(_, file string) string { return file }
	chown := func(p func(dir, file string) string) setup {
		return func(t *testing.T, dir, file string) {
			if os.Getuid() != 0 {
				t.Skip("chown needs root")
			}
			if err := os.Chown(p(dir, file), 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name    string
		private bool
		setup   setup
		want    string // "" accepted; {dir} and {file} are replaced
	}{
		{name: "public 0644 in 0700", setup: chmod(theFile, 0o644)},
		{name: "public 0444 in 0755", setup: func(t *testing.T, d, f string) { chmod(theFile, 0o444)(t, d, f); chmod(theDir, 0o755)(t, d, f) }},
		{name: "private 0600 in 0700", private: true, setup: chmod(theFile, 0o600)},
		{name: "private 0400", private: true, setup: chmod(theFile, 0o400)},
		{name: "public 0666", setup: chmod(theFile, 0o666), want: "chmod go-w {file}"},
		{name: "public 0620", setup: chmod(theFile, 0o620), want: "chmod go-w {file}"},
		{name: "private 0640", private: true, setup: chmod(theFile, 0o640), want: "chmod 600 {file}"},
		{name: "private 0604", private: true, setup: chmod(theFile, 0o604), want: "chmod 600 {file}"},
		{name: "dir 0777", setup: chmod(theDir, 0o777), want: "chmod 700 {dir}"},
		{name: "dir 0730", setup: chmod(theDir, 0o730), want: "chmod 700 {dir}"},
		{name: "dir 1777 (sticky is no excuse)", setup: chmod(theDir, os.ModeSticky|0o777), want: "chmod 700 {dir}"},
		{name: "file of another user", setup: chown(theFile), want: "owned by user 4242"},
		{name: "dir of another user", setup: chown(theDir), want: "owned by user 4242"},
		{name: "link into an open dir", setup: func(t *testing.T, dir, file string) {
			open := filepath.Join(t.TempDir(), "open")
			if err := os.Mkdir(open, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(open, 0o777); err != nil {
				t.Fatal(err)
			}
			real := filepath.Join(open, "real")
			if err := os.Rename(file, real); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, file); err != nil {
				t.Fatal(err)
			}
		}, want: "chmod 700"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "d")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "f")
			if err := os.WriteFile(file, []byte("trust me"), 0o600); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, dir, file)
			got, err := ReadFile(file, tc.private, 1<<10)
			if tc.want == "" {
				if err != nil || string(got) != "trust me" {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			want := strings.NewReplacer("{dir}", dir, "{file}", file).Replace(tc.want)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v; want one naming %q", err, want)
			}
		})
	}
}

// TestReadFileBounds: a file over the bound and a non-regular file are
// refused.
func TestReadFileBounds(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(file, true, 99); err == nil || !strings.Contains(err.Error(), "more than the 99") {
		t.Fatalf("oversized: %v", err)
	}
	if _, err := ReadFile(dir, false, 99); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: %v", err)
	}
}
