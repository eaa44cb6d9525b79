import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The folder's secret key: random bytes, kept in the folder, for keyed digests of values that
// must be recognised again but never stored (the HTTP cache's credentials).
extension DiskCache {
    /// The name of the file that holds the folder's secret key.
    static let secretKeyFileName = ".secret-key"

    /// The folder's secret key, 32 random bytes, created on first use.
    ///
    /// The key file is written to a temporary file (readable by its owner only) and renamed into
    /// place under the folder lock, so every instance and process on the folder reads the same
    /// key, and none reads half of one. A damaged key file is replaced by a new key (what was
    /// digested under the old one is then never matched again).
    ///
    /// - Throws: a ``CacheError`` if there is no key and one cannot be written (a read-only
    ///   folder).
    func secretKey() throws -> [UInt8] {
        let path = folderPath + "/" + DiskCache.secretKeyFileName
        if let key = SecretKeyFormat.read(path) { return key }
        return try folderLock.withLock { () throws -> [UInt8] in
            if let key = SecretKeyFormat.read(path) { return key }
            var generator = SystemRandomNumberGenerator()
            let key = (0..<SecretKeyFormat.keySize).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let (temporaryPath, file) = try createTemporaryFile(mode: 0o600)
            do {
                try file.write(SecretKeyFormat.encode(key), at: 0)
                if configuration.synchronizesWrites { try file.synchronize() }
                try FileSystem.rename(temporaryPath, to: path)
            } catch {
                try? FileSystem.remove(temporaryPath)
                throw CacheError.system("write the secret key", path: folderPath, error: error)
            }
            return key
        }
    }
}

/// The secret key file: magic "TRSK", the 32-byte key, and a CRC-32C of those 36 bytes
/// (little-endian). Anything else is damaged.
enum SecretKeyFormat {
    static let magic: [UInt8] = Array("TRSK".utf8)
    static let keySize = 32
    static let size = 4 + keySize + 4

    static func encode(_ key: [UInt8]) -> [UInt8] {
        var bytes = magic + key
        bytes.appendLittleEndian(CRC32C.checksum(bytes))
        return bytes
    }

    /// The key in the file at `path`, or `nil` if there is none or it is damaged.
    static func read(_ path: String) -> [UInt8]? {
        guard let file = try? SystemFile(path: path, flags: O_RDONLY),
              let bytes = try? file.read(count: size + 1, at: 0),
              bytes.count == size, bytes.starts(with: magic)
        else { return nil }
        let checksum = bytes.withUnsafeBytes { $0.littleEndian(UInt32.self, at: size - 4) }
        guard CRC32C.checksum(bytes[0..<(size - 4)]) == checksum else { return nil }
        return Array(bytes[4..<(4 + keySize)])
    }
}
