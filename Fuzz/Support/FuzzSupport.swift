// Compiled into every fuzz target (see Fuzz/run). A target defines `fuzzTarget(_:)`; this file
// gives libFuzzer its entry point and the targets their invariant check, which prints the input
// (hex and Base64) and aborts, so libFuzzer records the input as a crash.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The input being run, kept so that a failed invariant can print it.
nonisolated(unsafe) private var currentInput: [UInt8] = []

@_cdecl("LLVMFuzzerTestOneInput")
public func libFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    currentInput = bytes
    fuzzTarget(bytes)
    return 0
}

/// Fails the run unless `condition` holds: prints `message` and the input, then aborts.
func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
             line: UInt = #line) {
    guard !condition() else { return }
    fail(message(), line: line)
}

/// Prints `message` and the input that broke an invariant, then aborts.
func fail(_ message: String, line: UInt = #line) -> Never {
    let hex = currentInput.map { byte in
        let digits = String(byte, radix: 16)
        return digits.count == 1 ? "0" + digits : digits
    }.joined()
    let report = """

        ==== INVARIANT FAILED (harness line \(line)): \(message)
        ==== input (\(currentInput.count) bytes), hex: \(hex)
        ==== input, base64: \(base64(currentInput))
        ==== input, as text: \(String(decoding: currentInput, as: UTF8.self).debugDescription)

        """
    var bytes = Array(report.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        guard written > 0 else { break }
        bytes = bytes.dropFirst(written)
    }
    abort()
}

private func base64(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var out: [UInt8] = []
    var index = 0
    while index < bytes.count {
        let chunk = bytes[index..<min(index + 3, bytes.count)]
        let value = chunk.enumerated().reduce(0) { $0 | (Int($1.element) << (16 - 8 * $1.offset)) }
        for position in 0..<4 {
            out.append(position <= chunk.count ? alphabet[(value >> (18 - 6 * position)) & 63] : UInt8(ascii: "="))
        }
        index += 3
    }
    return String(decoding: out, as: UTF8.self)
}

/// Reads fuzzer-chosen numbers and choices off the front of an input; the rest is the payload.
struct FuzzInput {
    private(set) var bytes: ArraySlice<UInt8>

    init(_ bytes: [UInt8]) {
        self.bytes = bytes[...]
    }

    /// The next byte, or 0 when the input is used up.
    mutating func byte() -> UInt8 {
        bytes.popFirst() ?? 0
    }

    /// The next two bytes as a big-endian number, 0 when used up.
    mutating func uint16() -> Int {
        Int(byte()) << 8 | Int(byte())
    }
}

/// A small deterministic generator seeded by the input, for choices a harness derives from it
/// (the spelling of a respelled header, generated values) so that an input always runs the same.
struct FuzzGenerator {
    private var state: UInt64

    init(seed: [UInt8]) {
        state = seed.reduce(0x9E37_79B9_7F4A_7C15) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
    }

    /// The next 31 bits.
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 33
    }
}
