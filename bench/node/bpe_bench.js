// Benchmark W5, Node side: GPT-2 BPE encoding of the same text with js-tiktoken (gpt2) and
// gpt-3-encoder, in MB/s, and a check that their ids equal ours (read from the file that
// bench_bpe_encode --out wrote).
// Usage: node bench/node/bpe_bench.js --modules DIR [--text FILE] [--ours IDS.bin] [--repeat N]
//                                      [--gpt3 chunked|full|skip]
//   --modules: node_modules holding js-tiktoken and gpt-3-encoder (e.g. data/npm/node_modules)
//   --gpt3 chunked (default): gpt-3-encoder's encode() appends with Array.concat, quadratic in the
//     number of tokens (minutes for tinyshakespeare), so by default it is given the text in ~64 KB
//     chunks cut at safe split points (ASCII whitespace after a printable ASCII byte), which yields
//     the same ids; "full" times one call on the whole text.
//   Last lines are machine-readable: "RESULT <name> <MB/s>".
'use strict';
const fs = require('fs');
const path = require('path');

function parseArgs(argv) {
  const a = {modules: null, text: path.join(__dirname, '../../../shared/data/tinyshakespeare.txt'),
             ours: null, repeat: 5, gpt3: 'chunked'};
  for (let i = 2; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in a) || i + 1 >= argv.length) throw new Error('bad option ' + argv[i]);
    a[key] = key === 'repeat' ? parseInt(argv[i + 1], 10) : argv[i + 1];
  }
  if (!a.modules) throw new Error('--modules DIR (node_modules with js-tiktoken, gpt-3-encoder) is required');
  return a;
}

function median(xs) {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)];
}

function timeRuns(repeat, f) {
  const times = [];
  let out;
  for (let i = 0; i < repeat; i++) {
    const t0 = process.hrtime.bigint();
    out = f();
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return {seconds: median(times), out};
}

// Chunks of about `size` UTF-16 units, cut before an ASCII whitespace that follows a printable
// ASCII character (no GPT-2 pre-token crosses such a point, nor looks past it).
function safeChunks(text, size) {
  const chunks = [];
  let start = 0;
  while (start < text.length) {
    let cut = Math.min(text.length, start + size);
    while (cut < text.length) {
      const c = text.charCodeAt(cut), p = text.charCodeAt(cut - 1);
      if ((c === 32 || (c >= 9 && c <= 13)) && p > 32 && p < 127) break;
      cut++;
    }
    chunks.push(text.slice(start, cut));
    start = cut;
  }
  return chunks;
}

function sameIds(a, b) {
  if (a.length !== b.length) return `length ${a.length} vs ${b.length}`;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return `first difference at ${i}`;
  return 'identical';
}

function main() {
  const args = parseArgs(process.argv);
  const text = fs.readFileSync(args.text, 'utf8');
  const mb = Buffer.byteLength(text, 'utf8') / 1e6;
  const {getEncoding} = require(path.join(path.resolve(args.modules), 'js-tiktoken'));
  const gpt3 = require(path.join(path.resolve(args.modules), 'gpt-3-encoder'));
  let ours = null;
  if (args.ours) {
    const buf = fs.readFileSync(args.ours);
    ours = Array.from({length: buf.length / 2}, (_, i) => buf.readUInt16LE(2 * i));
  }
  const results = [];
  const enc = getEncoding('gpt2');
  enc.encode(text.slice(0, 100000), [], []);  // warm up the JIT
  const tk = timeRuns(args.repeat, () => enc.encode(text, [], []));
  results.push({name: 'js_tiktoken', seconds: tk.seconds, ids: tk.out});
  if (args.gpt3 !== 'skip') {
    const runs = args.gpt3 === 'full' ? 1 : Math.max(1, Math.min(3, args.repeat));
    const g = timeRuns(runs, () => {
      if (args.gpt3 === 'full') return gpt3.encode(text);
      const ids = [];
      for (const c of safeChunks(text, 65536)) for (const x of gpt3.encode(c)) ids.push(x);
      return ids;
    });
    results.push({name: 'gpt3_encoder_' + args.gpt3, seconds: g.seconds, ids: g.out});
  }
  console.log(`Node ${process.version}: GPT-2 BPE encode of ${args.text} (${text.length} chars)`);
  console.log('what'.padEnd(28) + 'ms'.padStart(10) + 'MB/s'.padStart(10) + '  ids vs ours');
  for (const r of results) {
    const check = ours ? sameIds(r.ids, ours) : '(no --ours file)';
    console.log(r.name.padEnd(28) + (r.seconds * 1e3).toFixed(1).padStart(10) +
                (mb / r.seconds).toFixed(2).padStart(10) + '  ' + check);
  }
  for (const r of results) {
    console.log(`RESULT ${r.name} ${(mb / r.seconds).toFixed(3)}`);
    if (ours) console.log(`IDS ${r.name} ${sameIds(r.ids, ours)}`);
  }
}

main();
