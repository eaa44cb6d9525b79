import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Signals

extension HTTPClient {
    /// A signal that continues the download `resumeData` describes into `destination`: a GET of
    /// its URL with `Range: bytes=<bytesOnDisk>-` and `If-Range: <validator>`.
    ///
    /// It behaves as ``download(_:to:options:)`` of that URL: progress starts at the bytes
    /// already on disk (``DownloadProgress/expectedBytes`` is the whole length), the file
    /// appears under `destination` only when complete, and a server that ignores the range or
    /// whose representation changed sends the whole body, which replaces the partial bytes
    /// (nothing is ever mixed). The resume data and the partial file are checked as input: when
    /// the partial file is gone, is not beside `destination` and cannot be moved there, is not a
    /// regular file of its own (a symbolic or hard link, a folder, a device, another user's file),
    /// or is shorter than ``DownloadResumeData/bytesOnDisk`` or longer than
    /// ``DownloadResumeData/totalBytes``, it is never opened through: the partial data is
    /// discarded (a link is removed, never its target) and the download starts from zero, without
    /// a `Range`.
    ///
    /// The request carries no header of the interrupted one: the client's default headers and
    /// its authoriser add them again. To send headers of your own, use
    /// ``download(_:to:options:)`` with a GET of the same URL to the same destination: it
    /// continues a partial file kept there by itself.
    public func download(
        resuming resumeData: DownloadResumeData,
        to destination: URL,
        options: RequestOptions = RequestOptions()
    ) -> Signal<DownloadEvent, any Error> {
        Signal(deferred: {
            KeptDownload.stage(resumeData, beside: destination)
            return self.download(URLRequest(url: resumeData.url), to: destination, options: options)
        })
    }
}

extension DownloadResumeData {
    /// The resume data kept on disk for a download to `destination`, if an interrupted one left
    /// its bytes there. Reading it changes nothing.
    /// A sidecar that is not a regular file of its own (a link, a folder, a device) is not read.
    public static func kept(for destination: URL) -> DownloadResumeData? {
        guard let json = KeptDownload.readSidecar(at: KeptDownload.sidecar(for: destination)),
              let data = try? JSONDecoder().decode(DownloadResumeData.self, from: json) else { return nil }
        return data
    }

    var isWellFormed: Bool {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return false }
        return KeptDownload.isValidValidator(validator)
            && bytesOnDisk > 0 && bytesOnDisk < totalBytes
            && KeptDownload.isPartialFileName(partialFile.lastPathComponent)
    }
}

/// The partial files an interrupted download keeps, and the rules for continuing one.
///
/// A kept download is a hidden partial file `.<name>.<uuid>.transit-partial` and a sidecar
/// `.<name>.transit-resume` (the ``DownloadResumeData`` as JSON) beside the destination
/// `<name>`. A download claims the sidecar by renaming it (atomic: two downloads to the same
/// destination never continue the same partial file), then reads it and removes it.
///
/// Both files are input (another process, or a user, may have changed them): a sidecar is read
/// only when it is a small regular file, and a partial file is opened without following a link
/// and used only when it is a regular file with one name, owned by this user, of a size that
/// can be the prefix the sidecar describes.
enum KeptDownload {
    static let partialSuffix = ".transit-partial"

    /// The largest sidecar read: a ``DownloadResumeData`` as JSON is far smaller.
    static let maxSidecarBytes = 16 * 1024

    /// The contents of the sidecar at `file`, or `nil` when it is missing, not a regular file
    /// (a link is not followed; a folder, a FIFO or a device is not read) or larger than
    /// ``maxSidecarBytes``.
    static func readSidecar(at file: URL) -> Data? {
        let descriptor = open(file.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG,
              status.st_size <= off_t(maxSidecarBytes) else { return nil }
        return try? handle.read(upToCount: maxSidecarBytes + 1)
    }

    /// `true` when `path` names a regular file of its own: not a link (never followed), one name
    /// (no hard link elsewhere), owned by this user.
    static func isOwnRegularFile(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0 && isOwnRegularFile(status)
    }

    private static func isOwnRegularFile(_ status: stat) -> Bool {
        (status.st_mode & S_IFMT) == S_IFREG && status.st_nlink == 1 && status.st_uid == geteuid()
    }

    /// The partial file at `file`, opened for writing without following a link and cut back to
    /// `kept`'s ``DownloadResumeData/bytesOnDisk``: `nil` (nothing written) unless it is a regular
    /// file of its own (see ``isOwnRegularFile(_:)``) holding from `bytesOnDisk` to
    /// `totalBytes` bytes.
    static func openPartial(_ file: URL, for kept: DownloadResumeData) -> FileHandle? {
        let descriptor = open(file.path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var status = stat()
        guard fstat(descriptor, &status) == 0, isOwnRegularFile(status),
              Int64(status.st_size) >= kept.bytesOnDisk, Int64(status.st_size) <= kept.totalBytes,
              ftruncate(descriptor, off_t(kept.bytesOnDisk)) == 0 else { return nil }
        return handle
    }

    static func sidecar(for destination: URL) -> URL {
        destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).transit-resume")
    }

    /// `true` for a name Transit gives partial files: hidden, one path component, ending in
    /// `.transit-partial`.
    static func isPartialFileName(_ name: String) -> Bool {
        name.hasPrefix(".") && name.hasSuffix(partialSuffix) && !name.contains("/") && name != "." && name != ".."
            && name.count > partialSuffix.count + 1
    }

    /// `true` for a validator that can be sent as `If-Range`: a strong entity tag (`"…"`, no
    /// `W/`) or a date of visible ASCII; never a line break or a control character.
    static func isValidValidator(_ value: String) -> Bool {
        guard !value.isEmpty, value.utf8.count <= 256 else { return false }
        if value.hasPrefix("\"") {
            let bytes = Array(value.utf8)
            guard bytes.count >= 2, bytes.last == 0x22 else { return false }
            // etagc: %x21 / %x23-7E (obs-text excluded: kept to ASCII).
            return bytes.dropFirst().dropLast().allSatisfy { $0 == 0x21 || (0x23...0x7E).contains($0) }
        }
        if value.hasPrefix("W/") { return false }
        // An HTTP date: visible ASCII and spaces.
        return value.utf8.allSatisfy { (0x20...0x7E).contains($0) } && value.first != " " && value.last != " "
    }

    /// How a response lets a download be continued later: its validator and total length, or
    /// `nil`. Status 200, `Accept-Ranges: bytes`, a strong `ETag` (else `Last-Modified`), a known
    /// length, no content coding.
    static func resumability(of head: HTTPResponseHead) -> (validator: String, total: Int64)? {
        guard head.statusCode == 200, !head.isContentEncoded, let total = head.declaredBodyLength, total > 0,
              acceptsByteRanges(head), let validator = validator(of: head) else { return nil }
        return (validator, total)
    }

    static func acceptsByteRanges(_ head: HTTPResponseHead) -> Bool {
        guard let value = head.value(forHTTPHeaderField: "Accept-Ranges") else { return false }
        return value.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces).lowercased() == "bytes" }
    }

    static func validator(of head: HTTPResponseHead) -> String? {
        if let etag = head.value(forHTTPHeaderField: "ETag")?.trimmingCharacters(in: .whitespaces),
           etag.hasPrefix("\""), isValidValidator(etag) {
            return etag
        }
        if head.value(forHTTPHeaderField: "ETag") != nil { return nil } // a weak or malformed tag: no date stands in
        if let date = head.value(forHTTPHeaderField: "Last-Modified")?.trimmingCharacters(in: .whitespaces),
           isValidValidator(date), !date.hasPrefix("\"") {
            return date
        }
        return nil
    }

    /// A `Content-Range: bytes <first>-<last>/<total>` header, strictly parsed; `nil` for anything
    /// else (another unit, `*`, a missing part, a number too long).
    static func contentRange(_ value: String) -> (first: Int64, last: Int64, total: Int64)? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let slash = spec.split(separator: "/", omittingEmptySubsequences: false)
        guard slash.count == 2 else { return nil }
        let bounds = slash[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = number(bounds[0]), let last = number(bounds[1]),
              let total = number(slash[1]), first <= last, last < total else { return nil }
        return (first, last, total)
    }

    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.count <= 18, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int64(text)
    }

    /// `true` if the 206 `head` answers a request for the bytes from `offset` of the
    /// representation `kept` describes, with exactly those bytes: one range (not
    /// `multipart/byteranges`), starting at `offset`, ending at the last byte, of the same total
    /// length, not content-encoded, with a length (when declared) that matches and an entity tag
    /// (when sent) equal to the validator.
    static func isContinuation(_ head: HTTPResponseHead, of kept: DownloadResumeData) -> Bool {
        guard head.statusCode == 206, !head.isContentEncoded,
              let rangeValue = head.value(forHTTPHeaderField: "Content-Range"),
              let range = contentRange(rangeValue),
              range.first == kept.bytesOnDisk, range.total == kept.totalBytes, range.last == kept.totalBytes - 1
        else { return false }
        if let type = head.value(forHTTPHeaderField: "Content-Type"), type.lowercased().contains("multipart/byteranges") { return false }
        if let length = head.value(forHTTPHeaderField: "Content-Length") {
            guard let declared = number(Substring(length.trimmingCharacters(in: .whitespaces))),
                  declared == kept.totalBytes - kept.bytesOnDisk else { return false }
        }
        if kept.validator.hasPrefix("\""), let etag = head.value(forHTTPHeaderField: "ETag")?.trimmingCharacters(in: .whitespaces),
           etag != kept.validator {
            return false
        }
        return true
    }

    /// Writes the sidecar of `data` for `destination` (atomically: a temporary file renamed over
    /// it). A sidecar that named another partial file is replaced and that file removed.
    static func park(_ data: DownloadResumeData, for destination: URL) {
        let sidecar = sidecar(for: destination)
        if let previous = claimSidecar(sidecar), previous.partialFile.lastPathComponent != data.partialFile.lastPathComponent {
            removePartial(previous.partialFile, beside: destination)
        }
        guard let json = try? JSONEncoder().encode(data) else { return }
        let staging = sidecar.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).\(UUID().uuidString).transit-resume")
        do {
            try json.write(to: staging)
            guard rename(staging.path, sidecar.path) == 0 else {
                try? FileManager.default.removeItem(at: staging)
                return
            }
        } catch {
            try? FileManager.default.removeItem(at: staging)
        }
    }

    /// Takes the sidecar at `sidecar` for this caller alone (renamed away, read, removed).
    private static func claimSidecar(_ sidecar: URL) -> DownloadResumeData? {
        let claimed = sidecar.deletingLastPathComponent().appendingPathComponent(".\(UUID().uuidString).transit-claimed")
        guard rename(sidecar.path, claimed.path) == 0 else { return nil }
        defer { unlink(claimed.path) }
        guard let json = readSidecar(at: claimed) else { return nil }
        if let data = try? JSONDecoder().decode(DownloadResumeData.self, from: json) { return data }
        // A sidecar that does not decode (damaged, or changed by hand): its partial file, if it
        // names one beside it, is removed too.
        if let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any],
           let partial = (object["partialFile"] as? String).flatMap(URL.init(string:)) {
            let name = partial.lastPathComponent
            if isPartialFileName(name) {
                removeFileOrLink(sidecar.deletingLastPathComponent().appendingPathComponent(name))
            }
        }
        return nil
    }

    /// Removes `partial` when it is a partial file beside `destination` (never anything else;
    /// a link is removed, not its target).
    static func removePartial(_ partial: URL, beside destination: URL) {
        let name = partial.lastPathComponent
        guard isPartialFileName(name) else { return }
        removeFileOrLink(destination.deletingLastPathComponent().appendingPathComponent(name))
    }

    /// Removes the name `file`: a file or a link itself (never what a link points to), or an
    /// empty folder. A folder with contents is left.
    private static func removeFileOrLink(_ file: URL) {
        if unlink(file.path) != 0 { rmdir(file.path) }
    }

    /// The partial download a request for `url` to `destination` continues, claimed for it, and
    /// its partial file opened for writing, holding exactly ``DownloadResumeData/bytesOnDisk``
    /// bytes (a longer one is cut back; see ``openPartial(_:for:)``). `nil` when there is none; a
    /// kept download of another URL, or one whose file is missing, short, too long or not a
    /// regular file of its own, is removed.
    static func claim(for destination: URL, url: URL) -> (data: DownloadResumeData, file: FileHandle)? {
        guard let kept = claimSidecar(sidecar(for: destination)) else { return nil }
        let file = destination.deletingLastPathComponent().appendingPathComponent(kept.partialFile.lastPathComponent)
        guard kept.url.absoluteString == url.absoluteString, kept.isWellFormed, let handle = openPartial(file, for: kept) else {
            removePartial(file, beside: destination)
            return nil
        }
        let data = DownloadResumeData(url: kept.url, validator: kept.validator, bytesOnDisk: kept.bytesOnDisk, totalBytes: kept.totalBytes, partialFile: file)
        return (data, handle)
    }

    /// Makes `data` the kept download of `destination`, unless one is kept already for the same
    /// partial file (a later interruption of the same download, which has more bytes). A partial
    /// file elsewhere is moved beside `destination` only when it is a regular file of its own
    /// (never a link); when it is not, or the move fails, nothing is staged.
    static func stage(_ data: DownloadResumeData, beside destination: URL) {
        guard data.isWellFormed else { return }
        let name = data.partialFile.lastPathComponent
        if DownloadResumeData.kept(for: destination)?.partialFile.lastPathComponent == name { return }
        let beside = destination.deletingLastPathComponent().appendingPathComponent(name)
        var status = stat()
        if lstat(beside.path, &status) != 0 {
            guard isOwnRegularFile(data.partialFile.path), rename(data.partialFile.path, beside.path) == 0 else { return }
        }
        park(DownloadResumeData(url: data.url, validator: data.validator, bytesOnDisk: data.bytesOnDisk, totalBytes: data.totalBytes, partialFile: beside), for: destination)
    }
}
