import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call: the errno it left.
struct SystemError: Error, Equatable {
    let code: Int32

    static var current: SystemError { SystemError(code: errno) }
}

/// An open file descriptor, closed when the object goes away. The thin layer over POSIX that the
/// cache uses instead of `FileHandle`: positioned reads and writes (`pread`/`pwrite`) update a
/// slot in place, `flock` coordinates with other processes, and every call retries on `EINTR`.
///
/// Thread safety: the descriptor never changes; positioned reads and writes need no shared offset.
final class SystemFile: Sendable {
    let descriptor: Int32

    /// Opens `path` with `flags` (`O_CLOEXEC` is always added); a file it creates is readable by
    /// its owner only unless `mode` says otherwise.
    init(path: String, flags: Int32, mode: mode_t = 0o600) throws {
        while true {
            let fd = open(path, flags | O_CLOEXEC, mode)
            if fd >= 0 {
                descriptor = fd
                return
            }
            if errno != EINTR { throw SystemError.current }
        }
    }

    deinit {
        close(descriptor)
    }

    /// The file's size in bytes.
    func size() throws -> Int {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw SystemError.current }
        return Int(info.st_size)
    }

    /// Makes the file readable and writable by its owner only (0600) if others may read or write
    /// it, and the caller owns it (a file written by an earlier version of the cache).
    func restrictToOwner() {
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & 0o077 != 0, info.st_uid == geteuid() else { return }
        _ = fchmod(descriptor, 0o600)
    }

    /// The file's identity (device and inode), to tell whether a path still names this file.
    func identity() throws -> FileIdentity {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw SystemError.current }
        return FileIdentity(info)
    }

    /// Reads up to `buffer.count` bytes at `offset`; fewer only at the end of the file.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws -> Int {
        var done = 0
        while done < buffer.count {
            let result = pread(descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if result > 0 {
                done += result
            } else if result == 0 {
                break
            } else if errno != EINTR {
                throw SystemError.current
            }
        }
        return done
    }

    /// Reads up to `count` bytes at `offset`.
    func read(count: Int, at offset: Int) throws -> [UInt8] {
        guard count > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = try bytes.withUnsafeMutableBytes { buffer throws -> Int in
            try self.read(into: buffer, at: offset)
        }
        if read < count { bytes.removeSubrange(read...) }
        return bytes
    }

    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws {
        var done = 0
        while done < bytes.count {
            let result = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if result >= 0 {
                done += result
            } else if errno != EINTR {
                throw SystemError.current
            }
        }
    }

    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: [UInt8], at offset: Int) throws {
        try bytes.withUnsafeBytes { buffer throws in try write(buffer, at: offset) }
    }

    /// Flushes the file's data to the device.
    func synchronize() throws {
        while fsync(descriptor) != 0 {
            if errno != EINTR { throw SystemError.current }
        }
    }

    /// Takes an advisory `flock` lock: exclusive or shared, waiting for it or not.
    ///
    /// - Returns: `false` if `wait` is `false` and another open file holds a conflicting lock.
    func lock(exclusive: Bool, wait: Bool) throws -> Bool {
        let operation = (exclusive ? LOCK_EX : LOCK_SH) | (wait ? 0 : LOCK_NB)
        while flock(descriptor, operation) != 0 {
            if errno == EWOULDBLOCK { return false }
            if errno != EINTR { throw SystemError.current }
        }
        return true
    }

    /// Releases a `flock` lock.
    func unlock() {
        _ = flock(descriptor, LOCK_UN)
    }
}

/// The device and inode of a file.
struct FileIdentity: Equatable, Sendable {
    let device: UInt64
    let inode: UInt64

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    /// The identity of the file `path` names now, or `nil` if there is none.
    static func of(path: String) -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileIdentity(info)
    }
}

/// File-system calls on paths.
enum FileSystem {
    /// Renames `source` to `destination`, atomically replacing it.
    static func rename(_ source: String, to destination: String) throws {
        #if canImport(Glibc)
        let result = Glibc.rename(source, destination)
        #elseif canImport(Musl)
        let result = Musl.rename(source, destination)
        #else
        let result = Darwin.rename(source, destination)
        #endif
        guard result == 0 else { throw SystemError.current }
    }

    /// Removes `path`; a missing file is not an error.
    static func remove(_ path: String) throws {
        guard unlink(path) == 0 || errno == ENOENT else { throw SystemError.current }
    }

    /// Creates the folder `path` and its missing parents, each readable by its owner only (0700).
    static func makeFolder(_ path: String) throws {
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { throw SystemError(code: ENOTDIR) }
            return
        }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != path { try makeFolder(parent) }
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else { throw SystemError.current }
    }

    /// Makes the folder `path` readable by its owner only (0700) if others may read it, it holds
    /// a file named `marker` (it is a cache folder, made by an earlier version of the cache), and
    /// the caller owns it. A folder the caller merely chose is left as it is.
    static func restrictFolderToOwner(_ path: String, marker: String) {
        var info = stat()
        var markerInfo = stat()
        guard stat(path, &info) == 0, info.st_mode & 0o077 != 0, info.st_uid == geteuid(),
              lstat(path + "/" + marker, &markerInfo) == 0 else { return }
        _ = chmod(path, 0o700)
    }

    /// The names in the folder `path`, without `.` and `..`.
    static func names(in path: String) throws -> [String] {
        guard let folder = opendir(path) else { throw SystemError.current }
        defer { closedir(folder) }
        var names: [String] = []
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// Flushes the folder `path` itself (its entries: a rename) to the device.
    static func synchronizeFolder(_ path: String) throws {
        let folder = try SystemFile(path: path, flags: O_RDONLY)
        try folder.synchronize()
    }
}
