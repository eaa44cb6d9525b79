import Foundation
import Synchronization

/// nginx on loopback, started by `nginx/nginx.sh` and stopped by ``stop()``: the server of the
/// transport and soak benchmarks.
public final class NginxServer: Sendable {
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("nginx/nginx.sh")

    public let port: Int
    public let folder: String
    private let stopped = Atomic<Bool>(false)
    private let fail: @Sendable (String) -> Never

    /// Starts nginx; `fail` reports a failure of the script and ends the program.
    public init(failingWith fail: @escaping @Sendable (String) -> Never) {
        self.fail = fail
        let output = Self.run(["start"], fail: fail)
        let fields = output.split(separator: " ")
        guard fields.count == 2, let port = Int(fields[0]) else { fail("nginx.sh start printed \(output.debugDescription)") }
        self.port = port
        folder = String(fields[1])
    }

    /// Stops nginx and removes its folder; later calls do nothing.
    public func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        _ = Self.run(["stop", folder], fail: fail)
    }

    private static func run(_ arguments: [String], fail: (String) -> Never) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script.path] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        do { try process.run() } catch { fail("cannot run \(script.path): \(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { fail("nginx.sh \(arguments.joined(separator: " ")) failed") }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
