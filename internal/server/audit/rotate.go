package audit

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// backupTimeFormat is the time in a rotated file's name, in UTC, as
// lumberjack (kube's rotation) writes it: audit.log becomes
// audit-2006-01-02T15-04-05.000.log, so that tools that collect kube's
// rotated audit logs find ours. Lumberjack is not used: it starts a
// goroutine that nothing stops, and fails a write larger than a file,
// where the writer here writes many events at once.
const backupTimeFormat = "2006-01-02T15-04-05.000"

// rotatingFile is a file that is renamed aside, with the time in its
// name, before it grows past maxSize, keeping maxBackups such files (0:
// all) no older than maxAgeDays (0: any age). Only the Log's writer uses it.
type rotatingFile struct {
	path                   string
	maxSize                int64 // 0: never rotate
	maxBackups, maxAgeDays int
	now                    func() time.Time
	log                    *slog.Logger // failures to remove old files

	f    *os.File
	size int64
}

func openRotating(path string, maxSize int64, maxBackups, maxAgeDays int, log *slog.Logger) (*rotatingFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &rotatingFile{path: path, maxSize: maxSize, maxBackups: maxBackups, maxAgeDays: maxAgeDays, now: time.Now, log: log, f: f, size: info.Size()}, nil
}

// Write writes whole lines of b, rotating the file between two lines when
// the next would take it past maxSize; a line larger than a whole file is
// written alone into a new one.
func (r *rotatingFile) Write(b []byte) (int, error) {
	total := len(b)
	for len(b) > 0 {
		n := len(b)
		if r.maxSize > 0 && r.size+int64(n) > r.maxSize {
			n = bytes.LastIndexByte(b[:max(r.maxSize-r.size, 0)], '\n') + 1
			if n == 0 && r.size > 0 {
				if err := r.rotate(); err != nil {
					return total - len(b), err
				}
				continue
			}
			if n == 0 {
				if n = bytes.IndexByte(b, '\n') + 1; n == 0 {
					n = len(b)
				}
			}
		}
		w, err := r.f.Write(b[:n])
		r.size += int64(w)
		if err != nil {
			return total - len(b) + w, err
		}
		b = b[n:]
	}
	return total, nil
}

// rotate renames the file aside and opens a new one, then removes the
// rotated files beyond maxBackups and maxAgeDays.
func (r *rotatingFile) rotate() error {
	if err := r.f.Close(); err != nil {
		return err
	}
	dir, prefix, ext := r.parts()
	now := r.now()
	t := now.UTC()
	name := filepath.Join(dir, prefix+t.Format(backupTimeFormat)+ext)
	for exists(name) { // two rotations within a millisecond
		t = t.Add(time.Millisecond)
		name = filepath.Join(dir, prefix+t.Format(backupTimeFormat)+ext)
	}
	flags := os.O_CREATE | os.O_TRUNC | os.O_WRONLY
	renameErr := os.Rename(r.path, name)
	if renameErr != nil { // go on writing the file as it is
		flags = os.O_CREATE | os.O_APPEND | os.O_WRONLY
	}
	f, err := os.OpenFile(r.path, flags, 0o600)
	if err != nil {
		return errors.Join(renameErr, err)
	}
	r.f = f
	if renameErr != nil {
		return fmt.Errorf("rotating the audit log: %w", renameErr)
	}
	r.size = 0
	if err := r.prune(now); err != nil {
		r.log.Warn("removing old audit logs", "err", err)
	}
	return nil
}

func exists(name string) bool {
	_, err := os.Lstat(name)
	return err == nil
}

// parts are the file's directory, and the parts of a rotated file's name
// around its time: audit.log gives "audit-" and ".log".
func (r *rotatingFile) parts() (dir, prefix, ext string) {
	base := filepath.Base(r.path)
	ext = filepath.Ext(base)
	return filepath.Dir(r.path), strings.TrimSuffix(base, ext) + "-", ext
}

// prune removes the rotated files beyond maxBackups (the oldest) and
// those older than maxAgeDays at now.
func (r *rotatingFile) prune(now time.Time) error {
	if r.maxBackups == 0 && r.maxAgeDays == 0 {
		return nil
	}
	dir, prefix, ext := r.parts()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	type backup struct {
		name string
		t    time.Time
	}
	var backups []backup
	for _, e := range entries {
		ts, ok := strings.CutPrefix(e.Name(), prefix)
		if ts, ok2 := strings.CutSuffix(ts, ext); ok && ok2 && e.Type().IsRegular() {
			if t, err := time.Parse(backupTimeFormat, ts); err == nil {
				backups = append(backups, backup{e.Name(), t})
			}
		}
	}
	slices.SortFunc(backups, func(a, b backup) int { return b.t.Compare(a.t) }) // newest first
	cutoff := now.Add(-time.Duration(r.maxAgeDays) * 24 * time.Hour)
	var errs []error
	for i, b := range backups {
		if (r.maxBackups > 0 && i >= r.maxBackups) || (r.maxAgeDays > 0 && b.t.Before(cutoff)) {
			if err := os.Remove(filepath.Join(dir, b.name)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Close closes the file.
func (r *rotatingFile) Close() error { return r.f.Close() }
