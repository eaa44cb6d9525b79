import Foundation
import OpenAPIRuntime

/// A request body held so that it can be sent again: in memory when its length is known and
/// small, otherwise in a file of its own, removed when the operation ends (the last reference
/// gone at the latest).
enum HeldBody: Sendable {
    /// No body.
    case none
    /// The body, in memory.
    case data(Data)
    /// The body, in a temporary file.
    case file(SpoolFile)

    /// Reads `body` (once: it may be a sequence that can be iterated only once) into memory or
    /// to a temporary file in `directory`.
    ///
    /// - Throws: ``TransitOpenAPIError/requestBodyTooLarge(limit:)`` as soon as the body is
    ///   longer than `maxBytes` (nothing is left on disk); the body's own error; a file-system
    ///   error; `CancellationError` when the task is cancelled.
    static func hold(
        _ body: HTTPBody?,
        inMemoryUpTo maxInMemory: Int,
        maxBytes: Int64,
        directory: URL
    ) async throws -> HeldBody {
        guard let body else { return .none }
        if case .known(let length) = body.length {
            guard length <= maxBytes else { throw TransitOpenAPIError.requestBodyTooLarge(limit: maxBytes) }
            if length <= maxInMemory {
                var data = Data()
                data.reserveCapacity(Int(length))
                for try await chunk in body {
                    guard Int64(data.count + chunk.count) <= maxBytes else {
                        throw TransitOpenAPIError.requestBodyTooLarge(limit: maxBytes)
                    }
                    data.append(contentsOf: chunk)
                }
                return .data(data)
            }
        }
        let file = try SpoolFile(in: directory)
        do {
            try await file.write(body, maxBytes: maxBytes)
        } catch {
            file.remove()
            throw error
        }
        return .file(file)
    }

    /// Removes the body's file, if it has one.
    func remove() {
        if case .file(let file) = self { file.remove() }
    }
}

/// A temporary file holding one request body, readable and writable by its owner only; removed
/// by ``remove()`` or, at the latest, when the last reference to it goes.
final class SpoolFile: Sendable {
    /// Where the body is.
    let url: URL

    /// Creates an empty file in `directory`.
    init(in directory: URL) throws {
        url = directory.appendingPathComponent("transit-openapi-\(UUID().uuidString).body")
        guard FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
    }

    deinit { remove() }

    /// Writes `body` to the file, failing once it passes `maxBytes`.
    func write(_ body: HTTPBody, maxBytes: Int64) async throws {
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var written: Int64 = 0
        for try await chunk in body {
            try Task.checkCancellation()
            written += Int64(chunk.count)
            guard written <= maxBytes else { throw TransitOpenAPIError.requestBodyTooLarge(limit: maxBytes) }
            try handle.write(contentsOf: chunk)
        }
    }

    /// Removes the file (again: nothing happens).
    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}
