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
final class FolderLock: Sendable {
    private let file: SystemFile?
    /// Guards the number of times the lock was taken. Not `Void`: a zero-sized value would share
    /// its address with the lock itself, which the thread sanitizer then reports as a race.
    private let mutex = Mutex<UInt64>(0)

    init(path: String) {
        if let file = try? SystemFile(path: path, flags: O_RDWR | O_CREAT, mode: 0o644) {
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
}
