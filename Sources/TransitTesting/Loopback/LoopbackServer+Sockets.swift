#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin wrappers over the POSIX socket, pipe, poll and thread calls the loopback server needs.
///
/// Every call retries on `EINTR`. Nothing here throws across a thread boundary: failures come
/// back as `nil`, `false` or a negative count.
enum POSIX {
    /// The current `errno`.
    static var errorNumber: Int32 { errno }

    /// A TCP socket listening on 127.0.0.1 at `port` (0: an ephemeral one), or the `errno` of
    /// the step that failed.
    static func listenOnLoopback(port requested: Int = 0, backlog: Int32 = 128) -> Result<(fd: Int32, port: Int), LoopbackServer.StartError> {
        #if canImport(Darwin)
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { return .failure(.init(step: "socket", errorNumber: errno)) }
        setCloseOnExec(fd)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        #if canImport(Darwin)
        address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(truncatingIfNeeded: requested)).bigEndian
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let error = errno
            close(fd)
            return .failure(.init(step: "bind", errorNumber: error))
        }
        guard listen(fd, backlog) == 0 else {
            let error = errno
            close(fd)
            return .failure(.init(step: "listen", errorNumber: error))
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getsockname(fd, $0, &length)
            }
        }
        guard named == 0 else {
            let error = errno
            close(fd)
            return .failure(.init(step: "getsockname", errorNumber: error))
        }
        return .success((fd, Int(UInt16(bigEndian: address.sin_port))))
    }

    /// Accepts one connection, or returns a negative value (see ``errorNumber``).
    static func acceptConnection(_ listener: Int32) -> Int32 {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0, errno == EINTR { continue }
            if fd >= 0 {
                setCloseOnExec(fd)
                #if canImport(Darwin)
                var yes: Int32 = 1
                setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
                #endif
            }
            return fd
        }
    }

    /// A pipe `(read, write)` used to wake every thread that polls its read end.
    static func makePipe() -> (read: Int32, write: Int32)? {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return nil }
        setCloseOnExec(fds[0])
        setCloseOnExec(fds[1])
        return (fds[0], fds[1])
    }

    private static func setCloseOnExec(_ fd: Int32) {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    /// The outcome of ``waitReadable(_:wake:timeoutMilliseconds:)``.
    enum Readiness {
        /// The wake pipe is readable: the server is stopping.
        case woken
        /// `fd` is readable, hung up or in error: a `recv` will not block.
        case readable
        /// The timeout passed.
        case timedOut
    }

    /// Waits until `fd` (if any) is readable or the wake pipe is, at most `timeoutMilliseconds`
    /// (negative: no limit).
    static func waitReadable(_ fd: Int32?, wake: Int32, timeoutMilliseconds: Int32) -> Readiness {
        let interesting = Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)
        var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        if let fd { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        while true {
            let count = poll(&fds, nfds_t(fds.count), timeoutMilliseconds)
            if count < 0 {
                if errno == EINTR { continue }
                return .woken
            }
            if count == 0 { return .timedOut }
            if fds[0].revents & interesting != 0 { return .woken }
            return .readable
        }
    }

    /// Reads what is available (at most `maxCount` bytes). `0` means the peer closed; negative
    /// means an error such as `ECONNRESET`.
    static func receive(_ fd: Int32, into buffer: inout [UInt8], maxCount: Int = 65_536) -> Int {
        var chunk = [UInt8](repeating: 0, count: maxCount)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, maxCount, 0) }
            if count < 0, errno == EINTR { continue }
            if count > 0 { buffer.append(contentsOf: chunk[0..<count]) }
            return count
        }
    }

    /// Writes all of `bytes`. Returns `false` if the connection failed (peer gone, shut down).
    static func sendAll(_ fd: Int32, _ bytes: some Collection<UInt8>) -> Bool {
        let array = Array(bytes)
        var offset = 0
        #if canImport(Darwin)
        let flags: Int32 = 0
        #else
        let flags = Int32(MSG_NOSIGNAL)
        #endif
        while offset < array.count {
            let written = array.withUnsafeBytes { raw in
                send(fd, raw.baseAddress! + offset, array.count - offset, flags)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    /// Shuts both directions of `fd` down, waking any thread blocked on it.
    static func shutdownBoth(_ fd: Int32) {
        #if canImport(Darwin)
        _ = shutdown(fd, SHUT_RDWR)
        #else
        _ = shutdown(fd, Int32(SHUT_RDWR))
        #endif
    }

    static func closeDescriptor(_ fd: Int32) {
        _ = close(fd)
    }

    static func wake(_ writeEnd: Int32) {
        var byte: UInt8 = 1
        while write(writeEnd, &byte, 1) < 0, errno == EINTR {}
    }

    /// Milliseconds for `poll`, rounded up, clamped to `Int32`.
    static func milliseconds(_ duration: Duration) -> Int32 {
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        let millis = seconds.multipliedReportingOverflow(by: 1000)
        guard !millis.overflow else { return Int32.max }
        let total = millis.partialValue + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: total)
    }
}

/// A joinable POSIX thread.
struct JoinableThread: Sendable {
    /// The `pthread_t`, kept as its bit pattern so the value is plainly `Sendable` on every
    /// platform (it is a pointer on Darwin, an integer on Linux).
    private let bits: UInt

    private init(handle: pthread_t) {
        #if canImport(Darwin)
        bits = UInt(bitPattern: handle)
        #else
        bits = UInt(handle)
        #endif
    }

    private var handle: pthread_t {
        #if canImport(Darwin)
        pthread_t(bitPattern: bits)!
        #else
        pthread_t(bits)
        #endif
    }

    private final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Starts `body` on a new thread, or returns `nil` if the system refused.
    static func start(_ body: @escaping @Sendable () -> Void) -> JoinableThread? {
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        #if canImport(Darwin)
        var handle: pthread_t?
        let result = pthread_create(&handle, nil, { raw in
            Unmanaged<Box>.fromOpaque(raw).takeRetainedValue().body()
            return nil
        }, context)
        guard result == 0, let handle else {
            Unmanaged<Box>.fromOpaque(context).release()
            return nil
        }
        return JoinableThread(handle: handle)
        #else
        var handle = pthread_t()
        let result = pthread_create(&handle, nil, { raw in
            guard let raw else { return nil }
            Unmanaged<Box>.fromOpaque(raw).takeRetainedValue().body()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<Box>.fromOpaque(context).release()
            return nil
        }
        return JoinableThread(handle: handle)
        #endif
    }

    /// Waits for the thread to end.
    func join() {
        _ = pthread_join(handle, nil)
    }

    /// `true` when called on this thread.
    var isCurrent: Bool {
        pthread_equal(handle, pthread_self()) != 0
    }
}
