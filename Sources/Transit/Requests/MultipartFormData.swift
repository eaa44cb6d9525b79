import Foundation

/// A `multipart/form-data` body (RFC 7578), built part by part: fields from strings or data, and
/// files that are streamed from disk when the body is written, never read into memory whole.
///
/// ```swift
/// var form = MultipartFormData()
/// form.append("Holiday", name: "title")
/// form.append(thumbnail, name: "thumbnail", filename: "thumb.png", contentType: "image/png")
/// form.append(fileAt: videoURL, name: "video", contentType: "video/mp4")
/// api.post(endpoint: "uploads", body: .multipart(form))
/// ```
///
/// **Names and filenames** are sent as UTF-8 inside `Content-Disposition` quoted strings, escaped
/// as the WHATWG HTML Standard (and so every browser) does: in a name, line breaks are first
/// normalised to CR LF; then CR becomes `%0D`, LF `%0A` and `"` `%22` (in a filename too). No
/// other character is changed, so a server reads what a browser would have sent. (The escaping is
/// not reversible: a name that contains the text `%22` reads back as `"`, as it does from a
/// browser.) Values are sent byte for byte.
///
/// **The boundary** is `transit-` and 32 random letters and digits (190 bits from the system's
/// secure generator) unless ``init(boundary:)`` chooses one. It is checked against every
/// in-memory part (its content, name and filename) when the part is appended, and a new one is
/// drawn if it occurs, so ``contentType``, which carries it, is always right for the body. File
/// contents are not read before sending, so they are not checked: a file contains a given
/// boundary with probability at most about `n / 62³²` for `n` bytes (below 10⁻⁴⁴ for a 1 TiB file)
/// unless someone can predict the system's random generator.
///
/// **Encoding.** Sent as a request body (`body: .multipart(form)`), a form whose parts are all in
/// memory and at most ``maxInMemoryBodyBytes`` long goes as a `Data` body; any other form is first written to a temporary file in ``temporaryDirectory``,
/// streaming each file in blocks of 64 KiB, then uploaded from that file, which is removed when
/// the request ends. ``encodedData()`` and ``writeBody(to:blockSize:)``
/// encode a form without sending it.
public struct MultipartFormData: Sendable {
    /// One part of the form.
    struct Part: Sendable {
        /// Where a part's content comes from.
        enum Content: Sendable, Hashable {
            /// Bytes held in memory.
            case data(Data)
            /// A file, read in blocks only while the body is written.
            case file(URL)
        }

        /// The field name, as given (unescaped).
        let name: String
        /// The filename sent with the part, as given (unescaped), or `nil`.
        let filename: String?
        /// The part's `Content-Type`, or `nil` to send none (a plain field).
        let contentType: String?
        /// The part's content.
        let content: Content
        /// The part's header lines and the blank line after them, escaped, as sent.
        let head: Data

        init(name: String, filename: String?, contentType: String?, content: Content) {
            self.name = name
            self.filename = filename
            self.contentType = contentType
            self.content = content
            var head = "Content-Disposition: form-data; name=\"\(MultipartFormData.escapeName(name))\""
            if let filename { head += "; filename=\"\(MultipartFormData.escapeFilename(filename))\"" }
            head += "\r\n"
            if let contentType { head += "Content-Type: \(contentType)\r\n" }
            head += "\r\n"
            self.head = Data(head.utf8)
        }

        /// `true` if `pattern` occurs in the part's head or in-memory content.
        func mentions(_ pattern: [UInt8]) -> Bool {
            if MultipartFormData.contains(pattern, in: head) { return true }
            if case .data(let data) = content { return MultipartFormData.contains(pattern, in: data) }
            return false
        }
    }

    /// The content type of a file part when none is given: `application/octet-stream`.
    static let defaultFileContentType = "application/octet-stream"

    /// The size of the blocks files are read and written in: 64 KiB.
    static let defaultBlockSize = 64 * 1024

    /// The parts, in the order they are sent.
    private(set) var parts: [Part] = []

    /// The boundary between parts. A random one may be replaced when an appended part contains
    /// it; ``contentType`` carries it (read it after the last `append`).
    private(set) var boundary: String

    /// `true` when ``init(boundary:)`` chose the boundary: it is never replaced, and a part that
    /// contains it makes encoding fail.
    let isBoundaryChosen: Bool

    /// Where a body that needs a file is written before it is uploaded (the system's temporary
    /// folder unless set). The file is removed when the request ends.
    public var temporaryDirectory: URL = FileManager.default.temporaryDirectory

    /// The largest body of in-memory parts that is sent from memory (10 MiB unless set); a larger
    /// one is written to a temporary file and uploaded from it, like a body with file parts.
    public var maxInMemoryBodyBytes: Int = 10 << 20

    /// The request's `Content-Type`, `multipart/form-data; boundary=…`, with the boundary between
    /// the parts: read it after the last `append` (a random boundary found in an appended part is
    /// replaced).
    public var contentType: String {
        "multipart/form-data; boundary=\(boundary)"
    }

    /// Creates an empty form with a random boundary.
    public init() {
        boundary = Self.randomBoundary()
        isBoundaryChosen = false
    }

    /// Creates an empty form with `boundary` (for a server that needs a known one, or a test that
    /// compares exact bytes).
    ///
    /// - Throws: ``MultipartFormDataError/invalidBoundary(_:)`` unless the boundary is 1 to 70
    ///   characters from ASCII letters, digits and `'+-._` (characters RFC 2046 allows in a
    ///   boundary that need no quoting in the `Content-Type` header).
    public init(boundary: String) throws(MultipartFormDataError) {
        guard Self.isValidBoundary(boundary) else { throw .invalidBoundary(boundary) }
        self.boundary = boundary
        isBoundaryChosen = true
    }

    /// Appends a part whose content is `data`.
    ///
    /// - Parameters:
    ///   - data: the content, sent byte for byte.
    ///   - name: the field name.
    ///   - filename: a filename to send with it (the part is then a file upload to the server).
    ///   - contentType: the part's `Content-Type`. `nil` sends none, unless a filename is given,
    ///     in which case it is `application/octet-stream`, as browsers send.
    public mutating func append(_ data: Data, name: String, filename: String? = nil, contentType: String? = nil) {
        let type = contentType ?? (filename == nil ? nil : Self.defaultFileContentType)
        add(Part(name: name, filename: filename, contentType: type, content: .data(data)))
    }

    /// Appends a field whose value is `text`, sent as UTF-8 byte for byte (line breaks are not
    /// normalised), with no `Content-Type` unless one is given.
    public mutating func append(_ text: String, name: String, contentType: String? = nil) {
        add(Part(name: name, filename: nil, contentType: contentType, content: .data(Data(text.utf8))))
    }

    /// Appends a part whose content is the file at `url`. The file is not read now: it is read in
    /// blocks when the body is written, so it must exist and be readable then (otherwise encoding
    /// fails with ``MultipartFormDataError/unreadableFile(_:partName:reason:)`` and nothing is
    /// sent).
    ///
    /// - Parameters:
    ///   - url: a regular file.
    ///   - name: the field name.
    ///   - filename: the filename sent; the file's own name (`url.lastPathComponent`) unless given.
    ///   - contentType: the part's `Content-Type`; `application/octet-stream` unless given (the
    ///     type is not guessed from the file's extension).
    public mutating func append(
        fileAt url: URL,
        name: String,
        filename: String? = nil,
        contentType: String = "application/octet-stream"
    ) {
        add(Part(name: name, filename: filename ?? url.lastPathComponent, contentType: contentType, content: .file(url)))
    }

    /// `true` if a part's content is a file.
    var containsFiles: Bool {
        parts.contains { if case .file = $0.content { true } else { false } }
    }

    /// The length of the encoded body when every part is in memory; `nil` when a part is a file
    /// (its size is only read when the body is written).
    var inMemoryLength: Int? {
        let delimiter = boundary.utf8.count + 4 // "--" boundary CRLF, or CRLF before the next one
        var total = delimiter + 2 // the closing "--boundary--" CRLF
        for part in parts {
            guard case .data(let data) = part.content else { return nil }
            total += delimiter + part.head.count + data.count + 2
        }
        return total
    }

    /// Whether a request sends this form through a temporary file rather than from memory.
    var needsFile: Bool {
        guard let length = inMemoryLength else { return true }
        return length > maxInMemoryBodyBytes
    }

    private mutating func add(_ part: Part) {
        parts.append(part)
        guard !isBoundaryChosen, part.mentions(Array(boundary.utf8)) else { return }
        // The new part contains the boundary: draw another that no part contains. Each draw
        // succeeds with overwhelming probability, so the loop ends after one round in practice.
        repeat {
            boundary = Self.randomBoundary()
        } while parts.contains(where: { $0.mentions(Array(boundary.utf8)) })
    }

    // MARK: escaping and the boundary

    /// `name` as sent in `Content-Disposition`: line breaks (CR, LF or CR LF) normalised to CR LF,
    /// then CR → `%0D`, LF → `%0A`, `"` → `%22` (the WHATWG multipart/form-data encoding).
    static func escapeName(_ name: String) -> String {
        var bytes: [UInt8] = []
        let input = Array(name.utf8)
        var index = 0
        while index < input.count {
            switch input[index] {
            case 0x0D:
                bytes += Array("%0D%0A".utf8)
                if index + 1 < input.count, input[index + 1] == 0x0A { index += 1 }
            case 0x0A:
                bytes += Array("%0D%0A".utf8)
            case 0x22:
                bytes += Array("%22".utf8)
            case let byte:
                bytes.append(byte)
            }
            index += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `filename` as sent in `Content-Disposition`: CR → `%0D`, LF → `%0A`, `"` → `%22` (the
    /// WHATWG multipart/form-data encoding; filenames are not newline-normalised).
    static func escapeFilename(_ filename: String) -> String {
        var bytes: [UInt8] = []
        for byte in filename.utf8 {
            switch byte {
            case 0x0D: bytes += Array("%0D".utf8)
            case 0x0A: bytes += Array("%0A".utf8)
            case 0x22: bytes += Array("%22".utf8)
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static let boundaryAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// `transit-` and 32 random letters and digits.
    static func randomBoundary() -> String {
        var generator = SystemRandomNumberGenerator()
        let tail = (0..<32).map { _ in boundaryAlphabet.randomElement(using: &generator)! }
        return "transit-" + String(decoding: tail, as: UTF8.self)
    }

    static func isValidBoundary(_ boundary: String) -> Bool {
        (1...70).contains(boundary.utf8.count) && boundary.utf8.allSatisfy { byte in
            boundaryAlphabet.contains(byte) || "'+-._".utf8.contains(byte)
        }
    }

    /// `true` if `pattern` (not empty) occurs in `data`.
    static func contains(_ pattern: [UInt8], in data: Data) -> Bool {
        guard let first = pattern.first, data.count >= pattern.count else { return false }
        return data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Bool in
            let last = bytes.count - pattern.count
            var index = 0
            while index <= last {
                if bytes[index] == first {
                    var matched = 1
                    while matched < pattern.count, bytes[index + matched] == pattern[matched] { matched += 1 }
                    if matched == pattern.count { return true }
                }
                index += 1
            }
            return false
        }
    }
}

/// Why a ``MultipartFormData`` could not be encoded. Nothing is sent when encoding fails.
public enum MultipartFormDataError: Error, Hashable, Sendable, CustomStringConvertible, LocalizedError, DescribedError {
    /// The file of part `partName` could not be read: it does not exist, is not a regular file,
    /// or could not be opened or read. `reason` says which.
    case unreadableFile(URL, partName: String, reason: String)
    /// The chosen boundary is not 1 to 70 ASCII letters, digits and `'+-._`.
    case invalidBoundary(String)
    /// The boundary chosen with ``MultipartFormData/init(boundary:)`` occurs in part `partName`
    /// (its content, name or filename), so the body could not be read back.
    case boundaryInPart(partName: String)
    /// The `Content-Type` of part `partName` is empty or has a control character (CR, LF, …).
    case invalidContentType(partName: String)
    /// ``MultipartFormData/encodedData()`` was asked for a form with file parts, which are never
    /// read into memory: send it with `RequestBody.multipart(_:)` or write it with
    /// ``MultipartFormData/writeBody(to:blockSize:)``.
    case containsFiles
    /// The body could not be written to `file` (`reason` says why: a full disk, a missing folder,
    /// no permission).
    case cannotWriteBody(URL, reason: String)

    public var description: String {
        switch self {
        case .unreadableFile(let url, let partName, let reason):
            return "Cannot read the file \(url.path) for the multipart part \(partName.debugDescription): \(reason). Nothing was sent."
        case .invalidBoundary(let boundary):
            return "Invalid multipart boundary \(boundary.debugDescription): use 1 to 70 ASCII letters, digits and '+-._."
        case .boundaryInPart(let partName):
            return "The multipart boundary occurs in the part \(partName.debugDescription), so the body would be ambiguous; "
                + "choose another boundary or let MultipartFormData draw a random one."
        case .invalidContentType(let partName):
            return "Invalid Content-Type for the multipart part \(partName.debugDescription): it is empty or contains a control character."
        case .containsFiles:
            return "The multipart form has file parts, which are never read into memory: send it "
                + "as a RESTAPI body `.multipart(form)`, or write it with MultipartFormData.writeBody(to:)."
        case .cannotWriteBody(let url, let reason):
            return "Cannot write the multipart body to \(url.path): \(reason)."
        }
    }
}
