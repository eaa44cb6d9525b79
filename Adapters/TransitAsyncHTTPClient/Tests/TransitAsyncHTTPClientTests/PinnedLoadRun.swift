import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOConcurrencyHelpers
import Signals
import Testing
import Transit
import TransitAsyncHTTPClient

/// The load run of `scripts/pinned-load` (not a unit test: it runs only when that script sets
/// `TRANSIT_PINNED_LOAD`): N concurrent GETs to nginx with TLS on loopback
/// (`Benchmarks/nginx/nginx-tls.sh`) through `AsyncHTTPClientTransport`'s public API, on one path:
///
/// - `pinned`: a server-trust rule with a public-key pin for 127.0.0.1, so every request goes over
///   the adapter's own HTTP/1.1 client;
/// - `ahc`: a rule with the same root and no pin, so every request goes through AsyncHTTPClient's
///   own pool.
///
/// Both use the default configuration (8 connections per host). It prints one line: requests
/// that succeeded (200 with the whole body), wall time from the first subscription to the last
/// end, the slowest request, peak open descriptors (sampled every 5 ms) and peak resident memory
/// of the process (VmHWM), and expects every request to succeed.
@Suite("Pinned path load run", .enabled(if: ProcessInfo.processInfo.environment["TRANSIT_PINNED_LOAD"] != nil))
struct PinnedLoadRun {
    @Test func concurrentGETsToOneHost() async throws {
        let environment = ProcessInfo.processInfo.environment
        let path = environment["TRANSIT_PINNED_LOAD"] ?? "pinned"
        let port = try #require(environment["TRANSIT_PINNED_LOAD_PORT"].flatMap(Int.init))
        let folder = try #require(environment["TRANSIT_PINNED_LOAD_FOLDER"])
        let count = environment["TRANSIT_PINNED_LOAD_REQUESTS"].flatMap(Int.init) ?? 10_000

        let roots = try ServerTrustPolicy.Certificate.pem(String(contentsOfFile: folder + "/ca.pem", encoding: .utf8))
        let pin = try ServerTrustPolicy.Pin.publicKey(
            sha256: String(contentsOfFile: folder + "/ca.pin", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        )
        let rule = try ServerTrustPolicy.Rule(host: "127.0.0.1", roots: roots, pins: path == "pinned" ? [pin] : [])
        let transport = AsyncHTTPClientTransport(serverTrust: try ServerTrustPolicy([rule]))
        let url = try #require(URL(string: "https://127.0.0.1:\(port)/json"))

        let peakFDs = NIOLockedValueBox(Self.openDescriptors())
        let sampling = NIOLockedValueBox(true)
        let sampler = Thread {
            while sampling.withLockedValue({ $0 }) {
                let open = Self.openDescriptors()
                peakFDs.withLockedValue { $0 = max($0, open) }
                usleep(5_000)
            }
        }
        sampler.start()

        struct Tally {
            var ok = 0
            var failed = 0
            var ended = 0
            var slowest: Duration = .zero
            var errors: [String: Int] = [:]
        }
        let tally = NIOLockedValueBox(Tally())
        let clock = ContinuousClock()
        let started = clock.now
        let tokens = NIOLockedValueBox<[CancellationToken]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // Resumed by the last request to end, after every subscription was made.
            let gate = NIOLockedValueBox((subscribed: false, resumed: false))
            @Sendable func resumeIfDone() {
                let resume = gate.withLockedValue { gate -> Bool in
                    guard gate.subscribed, !gate.resumed, tally.withLockedValue({ $0.ended }) == count else { return false }
                    gate.resumed = true
                    return true
                }
                if resume { continuation.resume() }
            }
            for _ in 0..<count {
                let begun = clock.now
                let token = transport.send(URLRequest(url: url)).sink(
                    receiveCompletion: { completion in
                        let elapsed = clock.now - begun
                        tally.withLockedValue { tally in
                            tally.ended += 1
                            tally.slowest = max(tally.slowest, elapsed)
                            if case .failure(let error) = completion {
                                tally.failed += 1
                                let name = (error as? URLError).map { "URLError.\($0.code.rawValue)" } ?? String(describing: type(of: error))
                                tally.errors[name, default: 0] += 1
                            }
                        }
                        resumeIfDone()
                    },
                    receiveValue: { response in
                        tally.withLockedValue { tally in
                            if response.statusCode == 200, response.data.count > 10_000 {
                                tally.ok += 1
                            } else {
                                tally.errors["status \(response.statusCode)", default: 0] += 1
                            }
                        }
                    }
                )
                tokens.withLockedValue { $0.append(token) }
            }
            gate.withLockedValue { $0.subscribed = true }
            resumeIfDone()
        }
        let elapsed = clock.now - started
        sampling.withLockedValue { $0 = false }
        tokens.withLockedValue { $0 = [] }
        try await transport.shutdown()

        let final = tally.withLockedValue { $0 }
        let errors = final.errors.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
        print(
            "pinned-load path=\(path) ok=\(final.ok) failed=\(final.failed) seconds=\(Self.seconds(elapsed))"
                + " slowest=\(Self.seconds(final.slowest)) peakFDs=\(peakFDs.withLockedValue { $0 })"
                + " peakRSSMiB=\(Self.peakResidentKiB() / 1024) errors=\(errors.isEmpty ? "-" : errors)"
        )
        #expect(final.ok == count)
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// The number of open file descriptors of this process.
    private static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    /// The peak resident set of this process (`VmHWM`), in KiB; -1 where it cannot be read.
    private static func peakResidentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.dropFirst(6).split(whereSeparator: \.isWhitespace).first ?? "") ?? -1
        }
        return -1
    }
}
