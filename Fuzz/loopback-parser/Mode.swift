/// loopback-parser fuzzes messages as they are (see LoopbackParserTarget.swift).
let expandsToLimits = false
