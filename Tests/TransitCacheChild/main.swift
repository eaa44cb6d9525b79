// A child process for TransitCache's fault-injection tests (`Tests/TransitCacheTests`), which
// start it, let it write, and kill it or change its file system under it:
//
//   TransitCacheChild slow-write DIR KEY   writes a large record slowly, printing "writing"
//                                          once the first chunk is on disk; never finishes
//   TransitCacheChild churn DIR KEY        stores records of varying sizes under KEY in a loop,
//                                          printing "committed N" after each
//   TransitCacheChild fs-faults DIR        (run under `unshare --user --map-root-user --mount`)
//                                          mounts a 1 MiB tmpfs on DIR, fills it, remounts it
//                                          read-only, and prints what the cache did, one
//                                          "name=value" line per observation
import Foundation
import TransitCache
#if canImport(Glibc)
import Glibc
#endif

/// Writes a line to standard output at once (unbuffered: the parent waits for it).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("TransitCacheChild: \(message)\n".utf8))
    exit(2)
}

/// The payload the churn mode stores as its `index`th record: a length and a byte that a reader
/// can recompute from the index in the metadata.
func churnPayload(_ index: Int) -> Data {
    Data(repeating: UInt8(index % 251), count: 1000 + (index &* 7919) % 300_000)
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: TransitCacheChild MODE DIR [KEY]") }
let directory = URL(fileURLWithPath: arguments[2])

switch arguments[1] {
case "slow-write":
    guard arguments.count >= 4 else { fail("slow-write needs a key") }
    do {
        let cache = try DiskCache(directory: directory)
        let writer = try cache.makeWriter(forKey: arguments[3], metadata: Data("new".utf8))
        let chunk = Data(repeating: 0x5A, count: 256 * 1024)
        try writer.append(chunk)
        say("writing")
        while true {
            try writer.append(chunk)
            usleep(2000)
        }
    } catch {
        fail("\(error)")
    }

case "churn":
    guard arguments.count >= 4 else { fail("churn needs a key") }
    do {
        let cache = try DiskCache(directory: directory)
        var index = 0
        while true {
            try cache.store(churnPayload(index), forKey: arguments[3], metadata: Data("\(index)".utf8))
            say("committed \(index)")
            index += 1
        }
    } catch {
        fail("\(error)")
    }

case "fs-faults":
    #if os(Linux)
    guard mount("tmpfs", arguments[2], "tmpfs", 0, "size=1048576") == 0 else {
        fail("mount tmpfs: \(String(cString: strerror(errno)))")
    }
    do {
        try fillFolder(directory)
        guard mount("none", arguments[2], "tmpfs", UInt(MS_REMOUNT | MS_RDONLY), nil) == 0 else {
            fail("remount read-only: \(String(cString: strerror(errno)))")
        }
        try useReadOnlyFolder(directory)
    } catch {
        fail("\(error)")
    }
    #else
    fail("fs-faults needs Linux")
    #endif

default:
    fail("unknown mode \(arguments[1])")
}

/// Stores a small record, then one larger than the volume; reports what happened. The cache is
/// released on return (its lock file closed), so the volume can be remounted read-only.
func fillFolder(_ directory: URL) throws {
    let cache = try DiskCache(directory: directory)
    try cache.store(Data(repeating: 1, count: 10_000), forKey: "small")
    do {
        try cache.store(Data(repeating: 2, count: 4 * 1024 * 1024), forKey: "big")
        say("full=stored")
    } catch let error as CacheError {
        if case .folderFull = error { say("full=folderFull") } else { say("full=\(error)") }
        say("fullMessage=\(error.description)")
    }
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(".tmp-") }
    say("temporaryFilesAfterFull=\(leftovers.count)")
    say("smallAfterFull=\(try cache.record(forKey: "small")?.data.count ?? -1)")
    say("bigAfterFull=\(try cache.record(forKey: "big")?.data.count ?? -1)")
}

/// Opens the cache on the read-only volume, reads, tries to store and pin; reports what happened.
func useReadOnlyFolder(_ directory: URL) throws {
    let cache = try DiskCache(directory: directory)
    say("readOnlyOpened=yes")
    say("smallReadOnly=\(try cache.record(forKey: "small")?.data.count ?? -1)")
    do {
        try cache.store(Data("x".utf8), forKey: "new")
        say("readOnlyStore=stored")
    } catch let error as CacheError {
        if case .folderNotWritable = error { say("readOnlyStore=folderNotWritable") } else { say("readOnlyStore=\(error)") }
        say("readOnlyMessage=\(error.description)")
    }
    do {
        try cache.pin("small")
        say("readOnlyPin=pinned")
    } catch let error as CacheError {
        if case .folderNotWritable = error { say("readOnlyPin=folderNotWritable") } else { say("readOnlyPin=\(error)") }
    }
    let report = try cache.collectGarbage()
    say("readOnlyGarbageCollection=\(report.evicted + report.expiredRemoved)")
}
