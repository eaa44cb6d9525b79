import Foundation
import Signals
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Sends `signal` to the process `pid`.
private func killProcess(_ pid: Int32, _ signal: Int32) -> Int32 {
    kill(pid, signal)
}

/// Runs `TransitCacheChild` (the executable target built next to the test bundle), reads its
/// output line by line, and kills it.
final class ChildProcess {
    enum Status: Equatable {
        case exited(Int32)
        case killed
        case signalled(Int32)
    }

    /// The child executable, next to the running test binary; `nil` if it is not there.
    static var executable: URL? {
        #if os(Linux)
        guard let binary = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        let folder = URL(fileURLWithPath: binary).deletingLastPathComponent()
        #else
        guard let bundle = Bundle.allBundles.first(where: { $0.bundlePath.hasSuffix(".xctest") }) else { return nil }
        let folder = bundle.bundleURL.deletingLastPathComponent()
        #endif
        let candidate = folder.appendingPathComponent("TransitCacheChild")
        return FileManager.default.isExecutableFile(atPath: candidate.path) ? candidate : nil
    }

    /// Runs the child in new user and mount namespaces, where it may mount a tmpfs that nobody
    /// else sees and that disappears with it.
    static let namespaceLauncher = ["/usr/bin/unshare", "--user", "--map-root-user", "--mount"]

    /// `true` if ``namespaceLauncher`` works on this machine.
    static let namespacesAvailable: Bool = {
        #if os(Linux)
        guard FileManager.default.isExecutableFile(atPath: namespaceLauncher[0]) else { return false }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: namespaceLauncher[0])
        process.arguments = Array(namespaceLauncher.dropFirst()) + ["/bin/sh", "-c", "exit 0"]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationReason == .exit && process.terminationStatus == 0
        #else
        return false
        #endif
    }()

    private let process = Process()
    private let output = Pipe()
    private var pending = Data()
    private var lines: [String] = []
    private var reachedEnd = false
    private let watchdog: DispatchWorkItem

    /// Starts `executable` with `arguments`, through `launcher` if one is given.
    ///
    /// A watchdog kills the child after two minutes, so a child that hangs fails the test
    /// instead of hanging it.
    init(_ executable: URL, _ arguments: [String], launcher: [String] = []) throws {
        if let first = launcher.first {
            process.executableURL = URL(fileURLWithPath: first)
            process.arguments = Array(launcher.dropFirst()) + [executable.path] + arguments
        } else {
            process.executableURL = executable
            process.arguments = arguments
        }
        process.standardOutput = output
        try process.run()
        let pid = process.processIdentifier
        let exited = ExitFlag()
        self.exited = exited
        watchdog = DispatchWorkItem {
            if !exited.isSet { _ = killProcess(pid, SIGKILL) }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 120, execute: watchdog)
    }

    private let exited: ExitFlag

    deinit {
        if process.isRunning {
            _ = killProcess(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        exited.set()
        watchdog.cancel()
    }

    /// Reads output until a line satisfies `predicate`, and returns it; `nil` if the child's
    /// output ends first.
    func waitForLine(_ predicate: (String) -> Bool) -> String? {
        var checked = 0
        while true {
            while checked < lines.count {
                if predicate(lines[checked]) { return lines[checked] }
                checked += 1
            }
            guard readMore() else { return nil }
        }
    }

    /// Reads the rest of the output and returns every line.
    func readToEnd() -> [String] {
        while readMore() {}
        return lines
    }

    /// Kills the child with SIGKILL and waits for it.
    func kill() -> Status {
        _ = killProcess(process.processIdentifier, SIGKILL)
        return waitForExit()
    }

    /// Waits for the child to end.
    func waitForExit() -> Status {
        process.waitUntilExit()
        exited.set()
        watchdog.cancel()
        switch process.terminationReason {
        case .exit: return .exited(process.terminationStatus)
        case .uncaughtSignal: return process.terminationStatus == SIGKILL ? .killed : .signalled(process.terminationStatus)
        @unknown default: return .exited(process.terminationStatus)
        }
    }

    private func readMore() -> Bool {
        guard !reachedEnd else { return false }
        let data = output.fileHandleForReading.availableData
        if data.isEmpty {
            reachedEnd = true
            if !pending.isEmpty { lines.append(String(decoding: pending, as: UTF8.self)) }
            pending = Data()
            return false
        }
        pending.append(data)
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
            pending = Data(pending[(newline + 1)...])
        }
        return true
    }
}

/// A flag raised once the child was reaped, so the watchdog never signals a reused process ID.
private final class ExitFlag: Sendable {
    private let raised = Mutex(false)
    var isSet: Bool { raised.withLock { $0 } }
    func set() { raised.withLock { $0 = true } }
}
