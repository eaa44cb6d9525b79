import Foundation

/// An `application/x-www-form-urlencoded` body: name–value pairs, in order, written and read as
/// the WHATWG URL Standard does (what browsers send for an HTML form and servers expect).
///
/// ```swift
/// let form: URLEncodedForm = ["q": "swift & signals", "tag": "http", "tag": "rest"]
/// form.encodedString   // "q=swift+%26+signals&tag=http&tag=rest"
/// ```
///
/// Fields keep their order and a name may repeat (the dictionary literal above is a list of pairs,
/// not a `Dictionary`). Names and values are any strings: serialising encodes them as UTF-8, writes
/// a space as `+`, keeps ASCII letters, digits and `*-._` as they are, and percent-encodes every other
/// byte (`%2B` for `+`, `%26` for `&`, `%3D` for `=`, `%25` for `%`, `%0D%0A` for a line break), so
/// `URLEncodedForm(parsing: Data(form.encodedString.utf8)) == form` for every form.
///
/// Send one as a request body: `api.post(endpoint: "oauth/token", body: .form(form))` (see
/// `RequestBody.form(_:)`).
public struct URLEncodedForm: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    /// One name–value pair.
    public struct Field: Sendable, Hashable {
        /// The field's name.
        public var name: String
        /// The field's value.
        public var value: String

        /// Creates a field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The media type of the serialised form: `application/x-www-form-urlencoded` (no `charset`
    /// parameter: the encoding is always UTF-8).
    static let contentType = "application/x-www-form-urlencoded"

    /// The fields, in the order they are sent. Add one after the others with
    /// `form.fields.append(.init(name: "tag", value: "rest"))` (a field with the same name is kept).
    public var fields: [Field]

    /// Creates a form with `fields`, in that order.
    public init(_ fields: [Field] = []) {
        self.fields = fields
    }

    /// Creates a form from name–value pairs, in order; a name may appear more than once.
    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// The serialised form: `name=value` pairs joined by `&`, each side encoded as the WHATWG
    /// `application/x-www-form-urlencoded` serialiser does. An empty form is the empty string.
    public var encodedString: String {
        fields.map { Self.encode($0.name) + "=" + Self.encode($0.value) }.joined(separator: "&")
    }

    /// ``encodedString`` as bytes (it is ASCII).
    var encodedData: Data {
        Data(encodedString.utf8)
    }

    /// Encodes `text` with the WHATWG urlencoded byte serialiser: its UTF-8 bytes, a space as `+`,
    /// ASCII letters, digits and `*-._` kept, every other byte as `%XX` (upper-case hexadecimal).
    static func encode(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if byte == 0x20 {
                bytes.append(UInt8(ascii: "+"))
            } else if isKept(byte) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Reads a form the way the WHATWG `application/x-www-form-urlencoded` parser does. It never
    /// fails: every input gives some list of fields.
    ///
    /// The input is split at `&`; empty pieces are skipped; each piece is split at its first `=`
    /// (a piece without one is a name with an empty value); `+` becomes a space; `%XX` sequences
    /// are decoded (a `%` not followed by two hexadecimal digits is kept as it is); the bytes are
    /// read as UTF-8, an invalid sequence becoming U+FFFD.
    public init(parsing data: Data) {
        var fields: [Field] = []
        for piece in data.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let name: Data.SubSequence
            let value: Data.SubSequence
            if let equals = piece.firstIndex(of: UInt8(ascii: "=")) {
                name = piece[piece.startIndex..<equals]
                value = piece[piece.index(after: equals)...]
            } else {
                name = piece
                value = piece[piece.endIndex...]
            }
            fields.append(Field(name: Self.decode(name), value: Self.decode(value)))
        }
        self.fields = fields
    }

    /// Reads a form from `text`'s UTF-8 bytes, as ``init(parsing:)`` reads `Data(text.utf8)`.
    init(parsing text: String) {
        self.init(parsing: Data(text.utf8))
    }

    private static func isKept(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return byte == UInt8(ascii: "*") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
        }
    }

    /// `+` as a space, then percent-decoding, then UTF-8 with replacement.
    private static func decode(_ bytes: Data.SubSequence) -> String {
        let input = Array(bytes)
        var output: [UInt8] = []
        output.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            let byte = input[index]
            if byte == UInt8(ascii: "%"), index + 2 < input.count,
               let high = hexValue(input[index + 1]), let low = hexValue(input[index + 2]) {
                output.append(high << 4 | low)
                index += 3
                continue
            }
            output.append(byte == UInt8(ascii: "+") ? 0x20 : byte)
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
