import Foundation
import Testing
@testable import TransitCache

@Suite("Checksums and key hashing")
struct ChecksumTests {
    @Test("CRC-32C matches the published check value and is the same in one piece or in chunks")
    func crc32c() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        // RFC 3720 (iSCSI) test vectors: 32 bytes of zeros, of 0xFF, ascending.
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        var crc = CRC32C()
        for chunk in stride(from: 0, to: bytes.count, by: 97) {
            crc.update(bytes[chunk..<min(chunk + 97, bytes.count)])
        }
        #expect(crc.value == CRC32C.checksum(bytes))
    }

    @Test("CRC-32C changes for any single flipped bit")
    func crc32cDetectsFlips() {
        let bytes = (0..<256).map { UInt8($0) }
        let reference = CRC32C.checksum(bytes)
        for index in stride(from: 0, to: bytes.count, by: 13) {
            for bit in 0..<8 {
                var flipped = bytes
                flipped[index] ^= UInt8(1 << bit)
                #expect(CRC32C.checksum(flipped) != reference)
            }
        }
    }

    @Test("SHA-256 matches the FIPS 180-4 examples")
    func sha256() {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        #expect(hex(SHA256.digest("".utf8)) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex(SHA256.digest("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hex(SHA256.digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(hex(SHA256.digest([UInt8](repeating: 0x61, count: 1_000_000)))
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("HMAC-SHA256 matches the RFC 4231 examples, a key longer than a block included")
    func hmacSHA256() {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        #expect(hex(HMACSHA256.authenticationCode(for: "Hi There".utf8, key: [UInt8](repeating: 0x0B, count: 20)))
            == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(hex(HMACSHA256.authenticationCode(for: "what do ya want for nothing?".utf8, key: Array("Jefe".utf8)))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(hex(HMACSHA256.authenticationCode(for: [UInt8](repeating: 0xDD, count: 50), key: [UInt8](repeating: 0xAA, count: 20)))
            == "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe")
        #expect(hex(HMACSHA256.authenticationCode(
            for: "Test Using Larger Than Block-Size Key - Hash Key First".utf8, key: [UInt8](repeating: 0xAA, count: 131)
        )) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test("a record's file name is its key's digest: 64 hex digits, no separator, whatever the key")
    func fileNames() {
        for key in ["", "a", "../../etc/passwd", "/absolute", "a/b\\c", "\0nul", String(repeating: "é", count: 5000)] {
            let name = RecordID(key: key).fileName
            #expect(name.utf8.count == 64 + RecordID.suffix.utf8.count)
            #expect(name.allSatisfy { $0.isHexDigit || $0 == "." || ("a"..."z").contains($0) })
            #expect(!name.contains("/"))
            #expect(RecordID(fileName: name) == RecordID(key: key))
        }
        #expect(RecordID(key: "a") != RecordID(key: "b"))
        #expect(RecordID(fileName: "not-a-record") == nil)
        #expect(RecordID(fileName: String(repeating: "g", count: 64) + RecordID.suffix) == nil)
    }
}
