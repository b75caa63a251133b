//! The audit log file: buffered appends, periodic flush, optional fsync and
//! size-based rotation (`log` -> `log.1` -> … -> `log.<keep>`).
//!
//! Owned by the writer thread alone, so none of it needs locking.

use crate::settings::FsyncPolicy;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

pub struct LogFile {
    path: PathBuf,
    out: BufWriter<File>,
    /// Bytes in the current file, buffered ones included.
    size: u64,
    max_bytes: u64,
    keep: usize,
    fsync: FsyncPolicy,
}

fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// `log.<n>` beside `log`.
pub fn rotated_path(path: &Path, n: usize) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{n}"));
    PathBuf::from(s)
}

impl LogFile {
    pub fn open(path: &Path, max_bytes: u64, keep: usize, fsync: FsyncPolicy) -> io::Result<Self> {
        let file = open(path)?;
        let size = file.metadata()?.len();
        Ok(LogFile {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(64 * 1024, file),
            size,
            max_bytes,
            keep,
            fsync,
        })
    }

    /// Appends one line (which must end in `\n`); rotates first when the
    /// line would take the file past `max_bytes`. Returns whether it rotated.
    pub fn append(&mut self, line: &[u8]) -> io::Result<bool> {
        let rotate =
            self.max_bytes > 0 && self.size > 0 && self.size + line.len() as u64 > self.max_bytes;
        if rotate {
            self.rotate()?;
        }
        self.out.write_all(line)?;
        self.size += line.len() as u64;
        Ok(rotate)
    }

    /// Hands buffered lines to the OS, and to the disk if so configured.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()?;
        if self.fsync == FsyncPolicy::Flush {
            self.out.get_ref().sync_data()?;
        }
        Ok(())
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.flush()?;
        if self.keep == 0 {
            std::fs::remove_file(&self.path)?;
        } else {
            // Oldest first, so nothing is overwritten before it has moved.
            for n in (1..self.keep).rev() {
                let from = rotated_path(&self.path, n);
                if from.exists() {
                    std::fs::rename(&from, rotated_path(&self.path, n + 1))?;
                }
            }
            std::fs::rename(&self.path, rotated_path(&self.path, 1))?;
        }
        self.out = BufWriter::with_capacity(64 * 1024, open(&self.path)?);
        self.size = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_by_size_and_keeps_n_files() {
        let dir = std::env::temp_dir().join(format!("parallax-rot-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.log");
        let mut log = LogFile::open(&path, 20, 2, FsyncPolicy::Never).unwrap();
        let mut rotations = 0;
        for i in 0..10 {
            // 10 bytes a line: two lines a file.
            if log.append(format!("line {i:04}\n").as_bytes()).unwrap() {
                rotations += 1;
            }
        }
        log.flush().unwrap();
        assert_eq!(rotations, 4);
        let read = |p: PathBuf| std::fs::read_to_string(p).unwrap();
        assert_eq!(read(path.clone()), "line 0008\nline 0009\n");
        assert_eq!(read(rotated_path(&path, 1)), "line 0006\nline 0007\n");
        assert_eq!(read(rotated_path(&path, 2)), "line 0004\nline 0005\n");
        assert!(!rotated_path(&path, 3).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
