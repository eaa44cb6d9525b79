// loopback-limits: the loopback-parser harness (Fuzz/loopback-parser/LoopbackParserTarget.swift,
// listed on this target's line in Fuzz/run) with filler runs expanded, so that messages reach the
// parser's size limits (small ones, set in that file, for all but one input in 32).

/// 0xFE d and 0xFD d in the message stand for runs of filler (see LoopbackParserTarget.swift).
let expandsToLimits = true
