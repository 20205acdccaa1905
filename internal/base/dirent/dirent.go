// Package dirent lists a directory by its descriptor, with getdents(2):
// no path is looked up, so what is listed is the directory the caller
// resolved, whatever was renamed since. The agent and the image layer
// unpacker use it.
package dirent

import "golang.org/x/sys/unix"

// Names lists the directory open as fd (not O_PATH), without "." and "..",
// in the order the file system gives.
func Names(fd int) ([]string, error) {
	var names []string
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
