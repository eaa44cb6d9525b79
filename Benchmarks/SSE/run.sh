#!/usr/bin/env bash
# Fetches mattt/EventSource 1.1.1's sources into Peer/EventSource (with Shim/URLSessionBytes.swift,
# which lets its URLSession client compile on Linux), builds sse-bench in release and runs it:
# throughput of both parsers in one process (rounds alternating), then the peak memory of one long
# stream through each parser, each in a process of its own. Arguments go to the throughput run.
#
#     Benchmarks/SSE/run.sh               # BENCHMARKS.md's numbers
#     Benchmarks/SSE/run.sh --rounds 3    # quicker
set -euo pipefail
cd "$(dirname "$0")"
if [[ ! -f Peer/EventSource/EventSource.swift ]]; then
    rm -rf Peer .build-peer-clone
    git -c advice.detachedHead=false clone --quiet --depth 1 --branch 1.1.1 https://github.com/mattt/EventSource .build-peer-clone
    mkdir -p Peer
    cp -R .build-peer-clone/Sources/EventSource Peer/EventSource
    rm -rf .build-peer-clone
fi
cp Shim/URLSessionBytes.swift Peer/EventSource/
swift build -c release --product sse-bench
bench=$(swift build -c release --show-bin-path)/sse-bench
echo "## sse-bench: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%d)"
"$bench" "$@"
"$bench" --memory transit
"$bench" --memory eventsource
