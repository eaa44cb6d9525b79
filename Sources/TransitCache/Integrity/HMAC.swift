/// HMAC-SHA256 (RFC 2104, FIPS 198-1) over this module's ``SHA256``: a keyed digest, so a value
/// can be recognised again without being stored, and its digest means nothing to anyone without
/// the key.
enum HMACSHA256 {
    /// The 32-byte authentication code of `message` under `key` (any length; a key longer than the
    /// 64-byte block is hashed first, as the standard says).
    static func authenticationCode<Message: Sequence>(for message: Message, key: [UInt8]) -> [UInt8]
    where Message.Element == UInt8 {
        var block = key.count > 64 ? SHA256.digest(key) : key
        block.append(contentsOf: repeatElement(0, count: 64 - block.count))
        var inner = SHA256()
        inner.update(block.map { $0 ^ 0x36 })
        inner.update(message)
        var outer = SHA256()
        outer.update(block.map { $0 ^ 0x5C })
        outer.update(inner.finalize())
        return outer.finalize()
    }
}
