#!/usr/bin/env node
// taxi_duckdb.mjs -- DuckDB beside PostgreSQL (DESIGN.md §6): the taxi
// benchmark's ten asks on an in-memory DuckDB holding the same rows.
//
// What it does: installs @duckdb/node-api (pinned, below) into a cache
// directory outside the repository (default
// ${XDG_CACHE_HOME:-~/.cache}/straum-bench/duckdb, `npm install --prefix`);
// creates an in-memory DuckDB, session time zone America/New_York (the ICU
// extension is built into the package's engine); creates the tables from
// bench/taxi_schema.sql as written (DuckDB reads PostgreSQL's type names:
// numeric(9,2) is DECIMAL(9,2), timestamptz TIMESTAMPTZ, ...); loads the
// zones CSV and taxi_gen's trips (COPY text format, streamed through a FIFO
// as `taxi` streams them into PostgreSQL's COPY FROM STDIN, or via a temp
// file with --load file) and times the load; then runs each ask of
// tests/kit/taxi_asks.h (postgres_sql, parsed from the header so the two cannot
// drift; DUCKDB_SQL below holds the asks whose DuckDB text differs) once to
// warm up and --runs times more, client-measured, and reports the median.
// With --pg CONNINFO it runs the same SQL on PostgreSQL through psql
// (session time zone America/New_York, \timing: client-measured too),
// compares each answer (rows as sets, decimals digit for digit, timestamps as
// instants; see tests/kit/answer.h) and exits 1 when one differs.
//
// Usage (from the repository, after building the C tools):
//   node bench/duckdb/taxi_duckdb.mjs --trips 20332093 --seed 42 \
//     --gen BUILD/bin/taxi_gen --pg 'host=... port=... dbname=...' --json out.json
// Options: --trips N (default 20,332,093) --seed S (42) --gen PATH (taxi_gen)
//   --zones CSV (bench/data/taxi_zone_lookup.csv) --source-dir DIR (the
//   repository; default: two levels above this script) --runs N (5, after one
//   warm-up) --threads N (DuckDB's default: all cores) --load stream|file
//   --no-primary-key --pg CONNINFO --pg-runs N (as --runs; 0: check only)
//   --json FILE --cache DIR --tmp DIR --sql FILE (a JSON array of {name, sql}:
//   those asks, timed only, instead of the ten; `taxi random` gives its
//   slowest this way)
// Exit status: 0 all good, 1 an answer differs from PostgreSQL's, 2 a failure.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const DUCKDB_NODE_API_VERSION = '1.5.6-r.1'; // DuckDB v1.5.6
const TZ = 'America/New_York';
const FULL_SCALE_TRIPS = 20332093;

// The asks whose DuckDB SQL differs from their postgres_sql, by name. Empty:
// DuckDB 1.5 takes all ten as PostgreSQL writes them (percentile_disc ...
// WITHIN GROUP, date_trunc and string literals as timestamptz in the session
// time zone through ICU). avg(numeric) is the one difference in the answers:
// DuckDB's avg of a DECIMAL is a DOUBLE, PostgreSQL's an exact numeric; the
// check compares those columns as numbers (see compareAnswers).
const DUCKDB_SQL = {};

// ---- Options --------------------------------------------------------------

const here = path.dirname(fileURLToPath(import.meta.url));
function usage(msg) {
  if (msg) process.stderr.write(`taxi_duckdb: ${msg}\n`);
  const doc = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n');
  const from = doc.findIndex((l) => l.startsWith('// Usage')), to = doc.findIndex((l) => l.startsWith('// Exit status'));
  process.stderr.write(doc.slice(from, to + 1).map((l) => l.slice(3)).join('\n') + '\n');
  process.exit(2);
}

function parseArgs(argv) {
  const o = {
    trips: FULL_SCALE_TRIPS, seed: 42, gen: null, zones: null,
    sourceDir: path.resolve(here, '..', '..'), runs: 5, threads: null, load: 'stream',
    primaryKey: true, pg: null, pgRuns: null, json: null, sql: null,
    cache: path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'),
      'straum-bench', 'duckdb'),
    tmp: os.tmpdir(),
  };
  const num = (v, name) => {
    if (!/^\d+$/.test(v ?? '')) usage(`${name} wants a whole number, not "${v}"`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i], v = argv[i + 1];
    switch (a) {
      case '--trips': o.trips = num(v, a); i++; break;
      case '--seed': o.seed = v; num(v, a); i++; break;
      case '--gen': o.gen = v; i++; break;
      case '--zones': o.zones = v; i++; break;
      case '--source-dir': o.sourceDir = v; i++; break;
      case '--runs': o.runs = num(v, a); i++; break;
      case '--threads': o.threads = num(v, a); i++; break;
      case '--load': o.load = v; i++; break;
      case '--no-primary-key': o.primaryKey = false; break;
      case '--pg': o.pg = v; i++; break;
      case '--pg-runs': o.pgRuns = num(v, a); i++; break;
      case '--json': o.json = v; i++; break;
      case '--cache': o.cache = v; i++; break;
      case '--tmp': o.tmp = v; i++; break;
      case '--sql': o.sql = v; i++; break;
      case '-h': case '--help': usage(); break;
      default: usage(`unknown option ${a}`);
    }
    if (v === undefined && !['--no-primary-key', '-h', '--help'].includes(a)) usage(`${a} wants a value`);
  }
  if (o.runs < 1) usage('--runs wants at least 1');
  if (!['stream', 'file'].includes(o.load)) usage('--load is stream or file');
  if (o.pgRuns === null) o.pgRuns = o.runs;
  o.zones ??= path.join(o.sourceDir, 'bench', 'data', 'taxi_zone_lookup.csv');
  if (!o.gen) {
    const found = (process.env.PATH || '').split(':').map((d) => path.join(d, 'taxi_gen'))
      .find((p) => fs.existsSync(p));
    if (!found) usage('no --gen and no taxi_gen on PATH');
    o.gen = found;
  }
  return o;
}

// ---- Small helpers ----------------------------------------------------------

const nowNs = () => process.hrtime.bigint();
const sinceUs = (t0) => Number(nowNs() - t0) / 1e3;

function fmtUs(us) {
  if (us < 1000) return `${us.toPrecision(3)} µs`;
  if (us < 1e6) return `${(us / 1e3).toPrecision(3)} ms`;
  return `${(us / 1e6).toFixed(2)} s`;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function procStatus() {
  const st = fs.readFileSync('/proc/self/status', 'utf8');
  const kib = (k) => Number((st.match(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm')) || [])[1] || 0);
  return { rss_kib: kib('VmRSS'), hwm_kib: kib('VmHWM') };
}

function machine() {
  const cpus = os.cpus();
  return {
    cpus: cpus.length, cpu_model: cpus[0]?.model, mem_total_gib: +(os.totalmem() / 2 ** 30).toFixed(1),
    kernel: os.release(), node: process.version,
  };
}

// ---- @duckdb/node-api from the cache ------------------------------------------

function loadDuckDB(cache) {
  const pkg = path.join(cache, 'node_modules', '@duckdb', 'node-api', 'package.json');
  let have = null;
  try { have = JSON.parse(fs.readFileSync(pkg, 'utf8')).version; } catch { /* not installed */ }
  if (have !== DUCKDB_NODE_API_VERSION) {
    fs.mkdirSync(cache, { recursive: true });
    process.stderr.write(`installing @duckdb/node-api@${DUCKDB_NODE_API_VERSION} into ${cache}\n`);
    const r = spawnSync('npm', ['install', '--prefix', cache, '--no-audit', '--no-fund',
      '--no-save', `@duckdb/node-api@${DUCKDB_NODE_API_VERSION}`], { stdio: 'inherit' });
    if (r.status !== 0) {
      process.stderr.write(`taxi_duckdb: npm install failed (${r.error?.message || `status ${r.status}`})\n`);
      process.exit(2);
    }
  }
  return createRequire(path.join(cache, 'node_modules', 'x.js'))('@duckdb/node-api');
}

// ---- The asks, from tests/kit/taxi_asks.h -------------------------------------------

// The TAXI_ASKS initializer: per entry, its groups of adjacent C string
// literals; the first is the name, the second postgres_sql.
function parseAsks(file) {
  const src = fs.readFileSync(file, 'utf8');
  const start = src.indexOf('TAXI_ASKS[] = {');
  if (start < 0) throw new Error(`no TAXI_ASKS in ${file}`);
  const macros = {};
  for (const m of src.matchAll(/^#define\s+(\w+)\s+"((?:[^"\\]|\\.)*)"/gm)) macros[m[1]] = m[2];
  const asks = [];
  let depth = 0, entry = null, group = null;
  const unescape = (s) => s.replace(/\\(["\\nt])/g, (_, c) => ({ n: '\n', t: '\t' })[c] ?? c);
  for (let i = src.indexOf('{', start); i < src.length; i++) {
    const ch = src[i];
    if (ch === '"') {
      let j = i + 1;
      while (src[j] !== '"') j += src[j] === '\\' ? 2 : 1;
      const lit = unescape(src.slice(i + 1, j));
      if (depth === 2) group = (group ?? '') + lit;
      i = j;
    } else if (ch === '{') {
      depth++;
      if (depth === 2) { entry = []; group = null; }
    } else if (ch === ',' || ch === '}') {
      if (depth === 2 && group !== null) { entry.push(group); group = null; }
      if (ch === '}') {
        if (depth === 2) asks.push({ name: entry[0], postgres_sql: entry[1] });
        if (--depth === 0) break;
      }
    } else if (depth === 2 && /[A-Z_]/.test(ch)) {
      const m = /^[A-Z_0-9]+/.exec(src.slice(i))[0];
      i += m.length - 1; // a macro (TAXI_ALL_FROM) among the params: not a string we need
      if (macros[m] !== undefined && group !== null) group += macros[m];
    }
  }
  if (asks.length !== 10 || asks.some((a) => !a.name || !/^SELECT /.test(a.postgres_sql)))
    throw new Error(`parsing ${file}: expected ten asks, got ${asks.length}`);
  return asks;
}

// --sql FILE: [{name, sql}], PostgreSQL's SQL over the raw rows as
// tests/kit/taxi_random.h writes it, in DuckDB's dialect: date_bin from the
// epoch is the epoch's seconds floored to the width (DuckDB's time_bucket
// on a TIMESTAMPTZ with an origin takes the ICU calendar per row, 10 to 100
// times slower than this, which would flatter Straum), and text compares
// bytewise by default (no "C" collation to name). Timed only: their
// answers are checked against PostgreSQL's by `taxi random` itself.
const WIDTH_S = { hour: 3600, hours: 3600, day: 86400, days: 86400 };
function readSqlAsks(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8')).map((a) => ({
    name: a.name, postgres_sql: a.sql, timed_only: true,
    duckdb_sql: a.sql.replace(/ COLLATE "C"/g, '').replace(
      /date_bin\('(\d+) (hours?|days?)', ([\w.]+), timestamptz 'epoch'\)/g,
      (_, n, unit, col) => {
        const w = Number(n) * WIDTH_S[unit];
        return `to_timestamp(floor(epoch(${col}) / ${w}) * ${w})`;
      }),
  }));
}

// ---- Answers: normalized rows (tests/kit/answer.c's rules) -------------------------------

// A timestamp with an offset becomes "@<µs since the epoch>".
function normText(s) {
  const m = /^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(\.\d+)?([+-]\d\d)(?::?(\d\d))?$/.exec(s);
  if (!m) return s;
  const frac = m[3] ? Math.round(Number(m[3]) * 1e6) : 0;
  const off = (Number(m[4]) * 60 + Math.sign(Number(m[4]) || 1) * Number(m[5] || 0)) * 60;
  const sec = Date.parse(`${m[1]}T${m[2]}Z`) / 1000 - off;
  return `@${BigInt(sec) * 1000000n + BigInt(frac)}`;
}

// Rows of a timed-only answer (no --pg) written to --json; past them the
// answer is left out (answer_omitted) and only its row count kept.
const ANSWER_KEPT_ROWS = 10000;

// DuckDB's values as cells: {text, num} where num is set for DOUBLE columns
// (compared as numbers), text otherwise.
function duckCells(reader, api) {
  const types = reader.columnTypes().map((t) => t.typeId);
  const isDouble = types.map((t) => t === api.DuckDBTypeId.DOUBLE || t === api.DuckDBTypeId.FLOAT);
  const isTz = types.map((t) => t === api.DuckDBTypeId.TIMESTAMP_TZ);
  return reader.getRows().map((row) => row.map((v, c) => {
    if (v === null) return { text: 'NULL', show: 'NULL' };
    if (isDouble[c]) return { text: String(v), num: v, show: String(v) };
    if (isTz[c]) return { text: `@${v.micros}`, show: String(v) };
    return { text: normText(String(v)), show: String(v) };
  }));
}

// Compares PostgreSQL's rows (text) with DuckDB's, as sets. Text columns
// compare digit for digit; where DuckDB returned a DOUBLE (avg of a numeric)
// PostgreSQL's exact value must round to the same double ("exact"), else be
// within a relative 1e-12 ("close"). Returns {equal, how, why}.
function compareAnswers(pgRows, duckRows) {
  if (pgRows.length !== duckRows.length)
    return { equal: false, why: `${pgRows.length} rows from PostgreSQL, ${duckRows.length} from DuckDB` };
  const keyOf = (cells) => cells.filter((c) => c.num === undefined).map((c) => c.text).join('|');
  const dk = duckRows.map((r) => ({ key: keyOf(r), r })).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key));
  const doubleCols = duckRows.length ? duckRows[0].map((c, i) => (c.num !== undefined ? i : -1)).filter((i) => i >= 0) : [];
  const pk = pgRows.map((r) => {
    const cells = r.map((t, i) => (doubleCols.includes(i) ? { text: t, num: Number(t) } : { text: normText(t) }));
    return { key: keyOf(cells), r: cells };
  }).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key));
  let how = doubleCols.length ? 'exact' : 'digits';
  for (let i = 0; i < pk.length; i++) {
    const p = pk[i], d = dk[i];
    if (p.r.length !== d.r.length) return { equal: false, why: `${p.r.length} columns from PostgreSQL, ${d.r.length} from DuckDB` };
    if (p.key !== d.key) return { equal: false, why: `PostgreSQL has (${p.key}), DuckDB (${d.key})` };
    for (const c of doubleCols) {
      const want = p.r[c], got = d.r[c];
      if (want.text === 'NULL' || got.text === 'NULL') {
        if (want.text !== got.text) return { equal: false, why: `row (${p.key}) column ${c + 1}: ${want.text} vs ${got.text}` };
        continue;
      }
      if (want.num === got.num) continue;
      if (Math.abs(want.num - got.num) <= 1e-12 * Math.abs(want.num)) { how = 'close'; continue; }
      return { equal: false, why: `row (${p.key}) column ${c + 1}: PostgreSQL ${want.text}, DuckDB ${got.text}` };
    }
  }
  return { equal: true, how };
}

// ---- PostgreSQL through psql -------------------------------------------------------

// Runs each ask 1 + runs times in one psql session (time zone New York,
// \timing on); returns per ask {rows: the first run's rows as arrays of text,
// times_us: the runs after the first}.
function runPostgres(conninfo, asks, runs) {
  const US = '\x1f';
  let script = `SET TIME ZONE '${TZ}';\n\\timing on\n`;
  asks.forEach((a, i) => {
    for (let r = 0; r <= runs; r++) script += `\\echo @@ask ${i} ${r}\n${a.postgres_sql};\n`;
  });
  const p = spawnSync('psql', ['-X', '-q', '-A', '-t', '-F', US, '-P', 'null=NULL',
    '-v', 'ON_ERROR_STOP=1', '-d', conninfo, '-f', '-'],
  { input: script, encoding: 'utf8', maxBuffer: 1 << 28, env: { ...process.env, PGTZ: TZ } });
  if (p.error || p.status !== 0)
    throw new Error(`psql failed (${p.error?.message || `status ${p.status}`}): ${p.stderr}`);
  const out = asks.map(() => ({ rows: [], times_us: [] }));
  let cur = null;
  for (const line of p.stdout.split('\n')) {
    let m;
    if ((m = /^@@ask (\d+) (\d+)$/.exec(line))) cur = { ask: +m[1], run: +m[2] };
    else if ((m = /^Time: ([\d.]+) ms/.exec(line))) {
      if (cur && cur.run > 0) out[cur.ask].times_us.push(Number(m[1]) * 1e3);
    } else if (cur && cur.run === 0 && line !== '') out[cur.ask].rows.push(line.split(US));
  }
  return out;
}

// ---- Loading --------------------------------------------------------------------

async function loadTrips(conn, o, columns) {
  const csvOpts = `delim='\\t', header=false, quote='', escape='', nullstr='\\N', ` +
    `auto_detect=false, columns={${columns}}`;
  const res = {};
  let gen = null;
  const dir = fs.mkdtempSync(path.join(o.tmp, 'taxi-duckdb-'));
  try {
    const genArgs = ['--trips', String(o.trips), '--seed', String(o.seed)];
    let file;
    const t0 = nowNs();
    if (o.load === 'stream') {
      // taxi_gen writes into a FIFO that DuckDB's CSV reader reads: generation
      // and load overlap, as in the benchmark's COPY FROM STDIN.
      file = path.join(dir, 'trips.fifo');
      if (spawnSync('mkfifo', [file]).status !== 0) throw new Error('mkfifo failed');
      gen = spawn('sh', ['-c', 'exec "$0" "$@" > "$TAXI_FIFO"', o.gen, ...genArgs],
        { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, TAXI_FIFO: file } });
    } else {
      file = path.join(dir, 'trips.tsv');
      const fd = fs.openSync(file, 'w');
      const r = spawnSync(o.gen, genArgs, { stdio: ['ignore', fd, 'inherit'] });
      fs.closeSync(fd);
      if (r.status !== 0) throw new Error(`${o.gen} failed: status ${r.status}`);
      res.generate_s = sinceUs(t0) / 1e6;
    }
    const genDone = gen && new Promise((resolve) => gen.on('exit', (code) => resolve(code)));
    const t1 = nowNs();
    await conn.run(`INSERT INTO yellow_trips SELECT * FROM read_csv('${file}', ${csvOpts})`);
    res.load_s = sinceUs(t1) / 1e6;
    if (genDone) {
      const code = await genDone;
      if (code !== 0) throw new Error(`${o.gen} exited with ${code}`);
      res.total_s = res.load_s;
    } else {
      res.total_s = sinceUs(t0) / 1e6;
    }
  } finally {
    if (gen && gen.exitCode === null && gen.signalCode === null) gen.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return res;
}

// ---- Main -------------------------------------------------------------------------

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const asks = o.sql ? readSqlAsks(o.sql) : parseAsks(path.join(o.sourceDir, 'tests', 'kit', 'taxi_asks.h'));
  let schema = fs.readFileSync(path.join(o.sourceDir, 'bench', 'taxi_schema.sql'), 'utf8');
  if (!o.primaryKey) schema = schema.replace(/\s+PRIMARY KEY/g, '');
  const api = loadDuckDB(o.cache);

  const inst = await api.DuckDBInstance.create(':memory:', o.threads ? { threads: String(o.threads) } : {});
  const conn = await inst.connect();
  const one = async (sql) => (await conn.runAndReadAll(sql)).getRowsJS()[0];
  await conn.run(`SET TimeZone = '${TZ}'`);
  const [version, threads, memLimit, tz] = await one(
    "SELECT version(), current_setting('threads'), current_setting('memory_limit'), current_setting('TimeZone')");
  const icu = (await one("SELECT count(*) FROM duckdb_extensions() WHERE extension_name = 'icu' AND loaded"))[0];
  if (!icu || tz !== TZ) throw new Error(`DuckDB has no ICU time zones (TimeZone ${tz})`);
  const rssBefore = procStatus();
  const mach = machine();
  console.log(`DuckDB ${version} (@duckdb/node-api ${DUCKDB_NODE_API_VERSION}), threads ${threads}, ` +
    `memory_limit ${memLimit}, time zone ${tz}; ${mach.cpus} CPUs (${mach.cpu_model}), ` +
    `${mach.mem_total_gib} GiB, node ${mach.node}`);

  await conn.run(schema);
  const colsOf = async (table) => (await conn.runAndReadAll(
    `SELECT column_name, data_type FROM information_schema.columns WHERE table_name = '${table}' ORDER BY ordinal_position`))
    .getRowsJS().map(([n, t]) => `'${n}': '${t}'`).join(', ');
  let t0 = nowNs();
  await conn.run(`INSERT INTO taxi_zones SELECT * FROM read_csv('${o.zones.replace(/'/g, "''")}', ` +
    `header=true, delim=',', quote='"', escape='"', auto_detect=false, columns={${await colsOf('taxi_zones')}})`);
  const zonesS = sinceUs(t0) / 1e6;
  console.log(`Loading ${o.trips.toLocaleString('en-US')} trips (seed ${o.seed}, ${o.load === 'stream'
    ? 'taxi_gen streamed through a FIFO' : 'taxi_gen to a temp file first'}, ` +
    `${o.primaryKey ? 'with' : 'without'} the PRIMARY KEY) ...`);
  const load = await loadTrips(conn, o, await colsOf('yellow_trips'));
  const [nTrips, nZones] = await one('SELECT (SELECT count(*) FROM yellow_trips), (SELECT count(*) FROM taxi_zones)');
  if (Number(nTrips) !== o.trips) throw new Error(`loaded ${nTrips} trips, not ${o.trips}`);
  const mem = procStatus();
  let duckMem = null;
  try { duckMem = Number((await one('SELECT sum(memory_usage_bytes) FROM duckdb_memory()'))[0]); } catch { /* older DuckDB */ }
  console.log(`  trips loaded in ${load.total_s.toFixed(2)} s` +
    (load.generate_s !== undefined ? ` (taxi_gen to file ${load.generate_s.toFixed(2)} s, DuckDB read ${load.load_s.toFixed(2)} s)` : '') +
    `; ${nZones} zones in ${fmtUs(zonesS * 1e6)}`);
  console.log(`  RSS after load ${(mem.rss_kib / 1024).toFixed(0)} MiB (peak ${(mem.hwm_kib / 1024).toFixed(0)} MiB; ` +
    `before load ${(rssBefore.rss_kib / 1024).toFixed(0)} MiB)` +
    (duckMem !== null ? `; duckdb_memory() ${(duckMem / 2 ** 20).toFixed(0)} MiB` : ''));

  const results = [];
  for (const [i, a] of asks.entries()) {
    const sql = a.duckdb_sql ?? DUCKDB_SQL[a.name] ?? a.postgres_sql;
    let reader = null;
    const times = [];
    try {
      for (let r = 0; r <= o.runs; r++) {
        const t = nowNs();
        const rd = await conn.runAndReadAll(sql);
        const us = sinceUs(t);
        if (r === 0) reader = rd; else times.push(us);
      }
    } catch (e) {
      if (!a.timed_only) throw e;
      results.push({ n: i + 1, name: a.name, duckdb_sql: sql, error: String(e.message || e), cells: [] });
      process.stderr.write(`  ask ${a.name}: DuckDB failed: ${e.message || e}\n`);
      continue;
    }
    // The answer is read into JS values only where it is compared with
    // PostgreSQL's or small: 824,189 rows of seven columns took node past
    // its 4 GiB heap (a timed-only --sql ask of `taxi random`).
    const keep = o.pg || reader.currentRowCount <= ANSWER_KEPT_ROWS;
    results.push({ n: i + 1, name: a.name, postgres_sql: a.postgres_sql, duckdb_sql: sql,
      rows: reader.currentRowCount, duckdb_us: times, duckdb_median_us: median(times),
      ...(keep ? {} : { answer_omitted: true }), cells: keep ? duckCells(reader, api) : [] });
    process.stderr.write(`  ask ${i + 1} ${fmtUs(median(times))}\n`);
  }

  let differ = 0;
  if (o.pg) {
    console.log(`PostgreSQL (psql, time zone ${TZ}): ${o.pgRuns ? `1 warm-up + ${o.pgRuns} runs each` : 'one run each'} ...`);
    const pg = runPostgres(o.pg, asks, o.pgRuns);
    results.forEach((r, i) => {
      const c = compareAnswers(pg[i].rows, r.cells);
      r.pg_rows = pg[i].rows.length;
      r.pg_answer = pg[i].rows;
      r.pg_us = pg[i].times_us;
      r.pg_median_us = pg[i].times_us.length ? median(pg[i].times_us) : null;
      r.equal = c.equal;
      r.compare = c.equal ? c.how : c.why;
      if (!c.equal) differ++;
    });
  }

  const w = [4, 32, 6, 12, 12, 9, 10];
  const line = (cells) => console.log(cells.map((c, i) => (i === 1 ? String(c).padEnd(w[i]) : String(c).padStart(w[i]))).join(' '));
  console.log('');
  line(['Ask', 'Name', 'Rows', 'DuckDB', ...(o.pg ? ['PostgreSQL', 'PG/DuckDB', 'Answer'] : [])]);
  for (const r of results) {
    line([r.n, r.name, r.rows, fmtUs(r.duckdb_median_us), ...(o.pg ? [
      r.pg_median_us !== null ? fmtUs(r.pg_median_us) : '-',
      r.pg_median_us !== null ? `${(r.pg_median_us / r.duckdb_median_us).toFixed(1)}x` : '-',
      r.equal ? (r.compare === 'digits' ? 'equal' : `equal(${r.compare})`) : 'DIFFERS'] : [])]);
    if (o.pg && !r.equal) console.log(`     ${r.compare}`);
  }
  console.log(`(medians of ${o.runs} runs after one warm-up, client-measured` +
    `${o.pg ? `; avg columns: DuckDB's DOUBLE vs PostgreSQL's numeric, "exact" = the same double` : ''})`);

  if (o.json) {
    const doc = {
      what: 'taxi asks on DuckDB (in memory) beside PostgreSQL, DESIGN.md §6',
      machine: mach,
      duckdb: { version, node_api: DUCKDB_NODE_API_VERSION, threads: Number(threads), memory_limit: memLimit, time_zone: tz },
      trips: o.trips, seed: Number(o.seed), zones: Number(nZones), primary_key: o.primaryKey,
      load: { mode: o.load, ...load, zones_s: zonesS },
      memory: { rss_after_load_kib: mem.rss_kib, peak_rss_kib: mem.hwm_kib, rss_before_load_kib: rssBefore.rss_kib,
        duckdb_memory_bytes: duckMem },
      runs: o.runs, pg_runs: o.pg ? o.pgRuns : null, pg_checked: !!o.pg,
      asks: results.map(({ cells, ...r }) => ({ ...r, answer: cells.map((row) => row.map((c) => c.show)) })),
    };
    fs.writeFileSync(o.json, JSON.stringify(doc, null, 2) + '\n');
  }
  conn.closeSync?.();
  inst.closeSync?.();
  if (differ) {
    console.log(`${differ} answer(s) differ from PostgreSQL's`);
    process.exitCode = 1;
  }
}

main().catch((e) => {
  process.stderr.write(`taxi_duckdb: ${e.stack || e}\n`);
  process.exit(2);
});
