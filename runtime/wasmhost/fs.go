package wasmhost

import (
	"io/fs"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// tripwire is the module's file system: one empty directory, "/", in
// which every operation is refused with EACCES and reported. It exists so
// that an attempt to read or change a file reaches the host, which can
// say so; with no directory at all, the module's own standard library
// would fail the attempt without the host ever seeing it. The root itself
// opens once, silently: that is the host giving the module its directory.
type tripwire struct{ inst *instance }

// emptyRoot is the root directory's content: nothing.
var emptyRoot = &sysfs.AdaptFS{FS: emptyDir{}}

type emptyDir struct{}

func (emptyDir) Open(name string) (fs.File, error) {
	if name != "." {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return emptyDirFile{}, nil
}

type emptyDirFile struct{}

func (emptyDirFile) Stat() (fs.FileInfo, error)         { return emptyDirInfo{}, nil }
func (emptyDirFile) Read([]byte) (int, error)           { return 0, fs.ErrInvalid }
func (emptyDirFile) Close() error                       { return nil }
func (emptyDirFile) ReadDir(int) ([]fs.DirEntry, error) { return nil, nil }

type emptyDirInfo struct{}

func (emptyDirInfo) Name() string       { return "." }
func (emptyDirInfo) Size() int64        { return 0 }
func (emptyDirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o555 }
func (emptyDirInfo) ModTime() time.Time { return time.Time{} }
func (emptyDirInfo) IsDir() bool        { return true }
func (emptyDirInfo) Sys() any           { return nil }

func (t tripwire) refuse(op, path string) experimentalsys.Errno {
	t.inst.m.host.report(t.inst, EventFile, op+" /"+path)
	return experimentalsys.EACCES
}

func (t tripwire) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if (path == "." || path == "") && !t.inst.rootOpened && flag&(experimentalsys.O_WRONLY|experimentalsys.O_RDWR|experimentalsys.O_CREAT|experimentalsys.O_TRUNC) == 0 {
		t.inst.rootOpened = true
		return emptyRoot.OpenFile(".", flag, perm)
	}
	op := "open"
	if flag&(experimentalsys.O_WRONLY|experimentalsys.O_RDWR|experimentalsys.O_CREAT|experimentalsys.O_TRUNC) != 0 {
		op = "open for writing"
	}
	return nil, t.refuse(op, path)
}

func (t tripwire) Lstat(path string) (sys.Stat_t, experimentalsys.Errno) {
	return sys.Stat_t{}, t.refuse("lstat", path)
}

func (t tripwire) Stat(path string) (sys.Stat_t, experimentalsys.Errno) {
	return sys.Stat_t{}, t.refuse("stat", path)
}

func (t tripwire) Readlink(path string) (string, experimentalsys.Errno) {
	return "", t.refuse("readlink", path)
}

func (t tripwire) Mkdir(path string, _ fs.FileMode) experimentalsys.Errno {
	return t.refuse("mkdir", path)
}

func (t tripwire) Chmod(path string, _ fs.FileMode) experimentalsys.Errno {
	return t.refuse("chmod", path)
}

func (t tripwire) Rename(from, to string) experimentalsys.Errno {
	return t.refuse("rename", from+" to /"+to)
}

func (t tripwire) Rmdir(path string) experimentalsys.Errno { return t.refuse("rmdir", path) }

func (t tripwire) Link(from, to string) experimentalsys.Errno {
	return t.refuse("link", from+" to /"+to)
}

func (t tripwire) Symlink(from, to string) experimentalsys.Errno {
	return t.refuse("symlink", to+" -> "+from)
}

func (t tripwire) Unlink(path string) experimentalsys.Errno { return t.refuse("unlink", path) }

func (t tripwire) Utimens(path string, _, _ int64) experimentalsys.Errno {
	return t.refuse("utimens", path)
}
