// Package vfs is the seam between the durable side of a table (the
// writer's segment files, index files, control file and directories) and
// the file system, so that tests can check what a crash of the machine
// would leave.
//
// Two implementations: OS, the file system as it is, and Strict, which
// does every operation on the real files too but keeps, beside them, only
// what has been made durable: the bytes of an O_DSYNC write once it
// returns, of a file at its fsync, of a mapped range at its msync, and a
// directory's entries at its fsync. Strict.Crash writes that durable
// image out as a new tree: the files as a power cut would leave them,
// under the strictest reading of POSIX (nothing unsynced survives). A
// test reopens the table from there and checks every acknowledged row.
//
// Only what goes through the seam counts: opening, creating, renaming and
// removing files and directories, writes to files opened O_DSYNC, fsync
// and msync. Reads, mappings and metadata queries go to the file system
// directly. Live slots (tmpfs) are outside the durable tree: a machine
// restart loses them, and Crash leaves them out.
//
// # Concurrency
//
// An FS may be used from any goroutine. A File is an *os.File with the
// durable-side operations overridden; its usual rules apply.
package vfs

import (
	"fmt"
	"os"

	"github.com/tickdb/tickdb/internal/mmap"
)

// FS is where the durable side opens, names and syncs its files.
type FS interface {
	// OpenFile is os.OpenFile. A file opened with O_DSYNC (or O_SYNC)
	// has every WriteAt durable when it returns.
	OpenFile(name string, flag int, perm os.FileMode) (*File, error)
	// Rename, Remove, RemoveAll, MkdirAll and MkdirTemp are the os
	// functions; what they change in a directory is durable once the
	// directory is synced (SyncPath).
	Rename(from, to string) error
	Remove(name string) error
	RemoveAll(name string) error
	MkdirAll(name string, perm os.FileMode) error
	MkdirTemp(dir, pattern string) (string, error)
	// SyncPath fsyncs a directory (its entries become durable) or a file
	// (its bytes and size become durable).
	SyncPath(name string) error
}

// File is an open file of an FS.
type File struct {
	*os.File
	tr    *tracked // nil on OS, and for files Strict does not track
	dsync bool     // opened O_DSYNC or O_SYNC: writes are durable on return
}

// WriteAt is os.File.WriteAt; on a file opened O_DSYNC the bytes are
// durable when it returns.
func (f *File) WriteAt(b []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(b, off)
	if f.tr != nil && f.dsync && n > 0 {
		f.tr.wrote(b[:n], off, f.tr.s.stamp())
	}
	return n, err
}

// Write is os.File.Write; on a file opened O_DSYNC the bytes are durable
// when it returns.
func (f *File) Write(b []byte) (int, error) {
	var off int64
	if f.tr != nil && f.dsync {
		off, _ = f.File.Seek(0, 1)
	}
	n, err := f.File.Write(b)
	if f.tr != nil && f.dsync && n > 0 {
		f.tr.wrote(b[:n], off, f.tr.s.stamp())
	}
	return n, err
}

// Sync is fsync: the file's bytes and size are durable when it returns.
func (f *File) Sync() error {
	if f.tr == nil {
		return f.File.Sync()
	}
	// What the file holds before the call is what the fsync promises;
	// bytes written meanwhile (by another goroutine) may or may not be
	// on disk, so the image leaves them out.
	at := f.tr.s.stamp()
	img, err := readImage(f.File)
	if err != nil {
		return err
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	f.tr.synced(img, at)
	return nil
}

// Msync writes back b, a shared mapping of the file's bytes from offset
// off, and waits (msync MS_SYNC): those bytes are durable when it
// returns. It may be called after Close: a mapping outlives its
// descriptor.
func (f *File) Msync(b []byte, off int64) error {
	if len(b) == 0 {
		return nil
	}
	var before []byte
	var at uint64
	if f.tr != nil {
		// The bytes as they are at the call: stores made while the
		// msync runs may or may not be written back.
		at = f.tr.s.stamp()
		before = append([]byte(nil), b...)
	}
	if err := mmap.MsyncSync(b); err != nil {
		return fmt.Errorf("msync %s [%d, %d): %w", f.Name(), off, off+int64(len(b)), err)
	}
	if f.tr != nil {
		f.tr.wrote(before, off, at)
	}
	return nil
}

// OS is the file system as it is.
var OS FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (*File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &File{File: f, dsync: flag&dsyncFlags != 0}, nil
}

func (osFS) Rename(from, to string) error                  { return os.Rename(from, to) }
func (osFS) Remove(name string) error                      { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                   { return os.RemoveAll(name) }
func (osFS) MkdirAll(name string, perm os.FileMode) error  { return os.MkdirAll(name, perm) }
func (osFS) MkdirTemp(dir, pattern string) (string, error) { return os.MkdirTemp(dir, pattern) }
func (osFS) SyncPath(name string) error                    { return syncPath(name) }

func syncPath(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	return nil
}
