package uploads

import (
	"os"
	"path/filepath"
)

// kept is the path of upload id's bytes in the objects directory under
// the uploads directory dir (a path that does not exist when none).
func kept(dir, id string) string {
	d := DirAt(dir)
	sum, _ := d.linked(id)
	if sum == "" {
		sum = "none"
	}
	return filepath.Join(d.idDir(id), sum)
}

// bytesGone says upload id has neither parts nor an object under dir.
func bytesGone(dir, id string) bool {
	for _, p := range []string{filepath.Join(dir, id), filepath.Join(dir, id+".info"), filepath.Dir(kept(dir, id))} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			return false
		}
	}
	return true
}
