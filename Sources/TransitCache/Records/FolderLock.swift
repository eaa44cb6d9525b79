import Foundation
import Signals
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The folder lock: a lock between the threads of this instance, then an exclusive `flock` on
/// the folder's lock file, between instances and processes. Commits, pins, removals and scans
/// hold it; reads do not.
///
/// If the lock file cannot be opened (a read-only folder, where nothing can change anyway),
/// only the in-process lock is taken.
///
/// The lock file also holds the folder's generation (see `GenerationFormat`), which
/// ``DiskCache/removeAll()`` changes: every instance holds the file open, so reading the
/// generation costs one `pread` and needs no lookup of the path.
final class FolderLock: Sendable {
    private let file: SystemFile?
    /// Guards the number of times the lock was taken. Not `Void`: a zero-sized value would share
    /// its address with the lock itself, which the thread sanitizer then reports as a race.
    private let mutex = Locked<UInt64>(0)

    init(path: String) {
        if let file = try? SystemFile(path: path, flags: O_RDWR | O_CREAT, mode: 0o600) {
            file.restrictToOwner()
            self.file = file
        } else {
            file = try? SystemFile(path: path, flags: O_RDONLY)
        }
    }

    func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try mutex.withLock { acquisitions throws(E) -> R in
            acquisitions &+= 1
            let locked = (try? file?.lock(exclusive: true, wait: true)) ?? false
            defer { if locked { file?.unlock() } }
            return try body()
        }
    }

    /// The folder's generation: 0 if the lock file is empty or cannot be opened, `nil` if its
    /// bytes are damaged. Reading needs no lock: the bytes are written with one `pwrite`, and a
    /// read that meets a write half done fails the checksum and reads as damaged (no write that
    /// started then commits).
    func generation() -> UInt64? {
        guard let file else { return 0 }
        guard let bytes = try? file.read(count: GenerationFormat.size + 1, at: 0) else { return nil }
        return GenerationFormat.decode(bytes)
    }

    /// Stores the folder's generation. Call it with the lock held.
    ///
    /// - Throws: a `SystemError` if the lock file cannot be written (it was opened read-only, or
    ///   not at all).
    func setGeneration(_ generation: UInt64) throws {
        guard let file else { throw SystemError(code: EBADF) }
        try file.write(GenerationFormat.encode(generation), at: 0)
    }
}
