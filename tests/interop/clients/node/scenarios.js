#!/usr/bin/env node
// node-zookeeper-client interop scenarios: CRUD, watches, ephemerals.
//
//   node scenarios.js --list
//   node scenarios.js SCENARIO HOST:PORT
//
// Prints a JSON-lines transcript of what the client observed (one object per step, keys
// sorted); tests/interop/clients/run.sh runs it against ZooKeeper and zkr and compares the
// transcripts. Exits non-zero if the scenario itself breaks (no session, a watch never fires).
'use strict';
const zookeeper = require('node-zookeeper-client');

const ACL = zookeeper.ACL.OPEN_ACL_UNSAFE;
const M = zookeeper.CreateMode;

function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object' && !Buffer.isBuffer(v)) {
    const o = {};
    for (const k of Object.keys(v).sort()) o[k] = sortKeys(v[k]);
    return o;
  }
  return v;
}

function emit(step, kv) {
  process.stdout.write(JSON.stringify(sortKeys(Object.assign({ step }, kv || {}))) + '\n');
}

function fail(msg) {
  process.stderr.write('FATAL: ' + msg + '\n');
  process.exit(1);
}

// longs arrive as 8-byte buffers; zxids fit a double exactly, session ids are compared as hex too
function long(b) { return Number(b.readBigInt64BE(0)); }

function stat(s) {
  if (!s) return null;
  return {
    czxid: long(s.czxid), mzxid: long(s.mzxid), ctime: long(s.ctime), mtime: long(s.mtime),
    version: s.version, cversion: s.cversion, aversion: s.aversion,
    ephemeralOwner: long(s.ephemeralOwner), dataLength: s.dataLength, numChildren: s.numChildren,
    pzxid: long(s.pzxid),
  };
}

function errName(e) { return e.name ? e.name + '[' + e.code + ']' : String(e); }

// calls fn(...args, cb) and resolves to {err} or {res: [results...]}
function call(fn, ...args) {
  return new Promise((resolve) => {
    fn(...args, (err, ...res) => resolve(err ? { err: errName(err) } : { res }));
  });
}

async function step(name, fn, shape) {
  const r = await fn();
  if (r.err) emit(name, { err: r.err });
  else emit(name, shape ? shape(...r.res) : {});
  return r;
}

function connect(addr, timeout) {
  return new Promise((resolve) => {
    const c = zookeeper.createClient(addr, { sessionTimeout: timeout || 10000, retries: 3 });
    const t = setTimeout(() => fail('no session with ' + addr + ' within 20s'), 20000);
    c.once('connected', () => { clearTimeout(t); resolve(c); });
    c.connect();
  });
}

function watchEvent(label, timeoutMs) {
  let resolve;
  const p = new Promise((r) => { resolve = r; });
  const w = (ev) => resolve(ev);
  w.wait = async () => {
    const t = setTimeout(() => fail(label + ': no watch event within ' + timeoutMs + 'ms'), timeoutMs || 10000);
    const ev = await p;
    clearTimeout(t);
    emit(label, { type: ev.getName(), path: ev.getPath() });
  };
  w.silent = async () => {
    const r = await Promise.race([p, new Promise((ok) => setTimeout(() => ok(null), 500))]);
    emit(label, r ? { unexpected: r.getName(), path: r.getPath() } : { silent: true });
  };
  return w;
}

async function rmr(c, p) {
  const r = await call(c.getChildren.bind(c), p);
  if (r.err) return;
  for (const k of r.res[0]) await rmr(c, p + '/' + k);
  await call(c.remove.bind(c), p, -1);
}

function closeClient(c) {
  return new Promise((resolve) => { c.once('disconnected', resolve); c.close(); });
}

async function crud(addr) {
  const R = '/node_crud';
  const c = await connect(addr);
  const b = (f) => f.bind(c);
  await rmr(c, R);
  await step('create_root', () => call(b(c.create), R, Buffer.from('root'), ACL, M.PERSISTENT), (p) => ({ path: p }));
  await step('create_dup', () => call(b(c.create), R, Buffer.from('x'), ACL, M.PERSISTENT));
  await step('create_noparent', () => call(b(c.create), R + '/a/b', null, ACL, M.PERSISTENT));
  await step('create_a', () => call(b(c.create), R + '/a', Buffer.from('alpha'), ACL, M.PERSISTENT), (p) => ({ path: p }));
  await step('get_a', () => call(b(c.getData), R + '/a'), (d, s) => ({ data: d.toString(), stat: stat(s) }));
  await step('set_a_v0', () => call(b(c.setData), R + '/a', Buffer.from('beta'), 0), (s) => ({ stat: stat(s) }));
  await step('set_a_badversion', () => call(b(c.setData), R + '/a', Buffer.from('gamma'), 0));
  await step('exists_a', () => call(b(c.exists), R + '/a'), (s) => ({ stat: stat(s) }));
  await step('exists_missing', () => call(b(c.exists), R + '/missing'), (s) => ({ stat: stat(s) }));
  await step('get_missing', () => call(b(c.getData), R + '/missing'));
  for (let i = 0; i < 3; i++) {
    await step('create_seq', () => call(b(c.create), R + '/s-', null, ACL, M.PERSISTENT_SEQUENTIAL), (p) => ({ path: p }));
  }
  await step('children_root', () => call(b(c.getChildren), R), (k, s) => ({ children: k.sort(), stat: stat(s) }));
  await step('delete_badversion', () => call(b(c.remove), R + '/a', 5));
  await step('delete_notempty', () => call(b(c.remove), R, -1));
  const ro = [new zookeeper.ACL(zookeeper.Permission.READ, new zookeeper.Id('world', 'anyone'))];
  await step('setacl_a', () => call(b(c.setACL), R + '/a', ro, -1), (s) => ({ stat: stat(s) }));
  await step('getacl_a', () => call(b(c.getACL), R + '/a'),
    (acls, s) => ({ acl: acls.map((a) => ({ perms: a.permission, scheme: a.id.scheme, id: a.id.id })), stat: stat(s) }));
  await step('set_readonly', () => call(b(c.setData), R + '/a', Buffer.from('no'), -1));
  await step('multi_failing', () => new Promise((resolve) => {
    c.transaction().create(R + '/m1', Buffer.from('m')).setData(R + '/a', Buffer.from('x'), -1).check(R + '/a', 99)
      .commit((err, res) => resolve({ res: [err ? errName(err) : null, res] }));
  }), (err, res) => ({ commit_err: err, results: (res || []).map((r) => ({ type: r.type, err: r.err })) }));
  await step('exists_m1_after_failed_multi', () => call(b(c.exists), R + '/m1'), (s) => ({ exists: !!s }));
  await step('multi_ok', () => new Promise((resolve) => {
    c.transaction().create(R + '/m1', Buffer.from('m')).create(R + '/m2').remove(R + '/m1', 0)
      .commit((err, res) => resolve({ res: [err ? errName(err) : null, res] }));
  }), (err, res) => ({ commit_err: err, results: (res || []).map((r) => ({ type: r.type, path: r.path || null })) }));
  await rmr(c, R);
  await step('exists_root_after_rmr', () => call(b(c.exists), R), (s) => ({ exists: !!s }));
  await closeClient(c);
}

async function watches(addr) {
  const R = '/node_watch';
  const c = await connect(addr);
  const w = await connect(addr);
  await rmr(c, R);
  await step('create_root', () => call(c.create.bind(c), R, null, ACL, M.PERSISTENT));
  await step('create_n', () => call(c.create.bind(c), R + '/n', Buffer.from('v0'), ACL, M.PERSISTENT));

  let ev = watchEvent('event_data_changed');
  await step('getw_n', () => call(w.getData.bind(w), R + '/n', ev), (d) => ({ data: d.toString() }));
  await step('set_n', () => call(c.setData.bind(c), R + '/n', Buffer.from('v1'), -1));
  await ev.wait();
  let again = watchEvent('one_shot_data_watch');
  // the fired watcher is not registered again: a second change must reach no one
  await step('set_n_again', () => call(c.setData.bind(c), R + '/n', Buffer.from('v2'), -1));
  await again.silent();

  ev = watchEvent('event_created');
  await step('existsw_missing', () => call(w.exists.bind(w), R + '/later', ev), (s) => ({ exists: !!s }));
  await step('create_later', () => call(c.create.bind(c), R + '/later', Buffer.from('l'), ACL, M.PERSISTENT));
  await ev.wait();

  ev = watchEvent('event_children_changed_create');
  await step('childrenw_root', () => call(w.getChildren.bind(w), R, ev), (k) => ({ children: k.sort() }));
  await step('create_kid', () => call(c.create.bind(c), R + '/kid', null, ACL, M.PERSISTENT));
  await ev.wait();

  ev = watchEvent('event_children_changed_delete');
  await step('childrenw_root_again', () => call(w.getChildren.bind(w), R, ev), (k) => ({ children: k.sort() }));
  await step('delete_kid', () => call(c.remove.bind(c), R + '/kid', -1));
  await ev.wait();

  const dev = watchEvent('event_deleted_data_watch');
  const cev = watchEvent('event_deleted_child_watch');
  await step('getw_n_for_delete', () => call(w.getData.bind(w), R + '/n', dev));
  await step('childrenw_n_for_delete', () => call(w.getChildren.bind(w), R + '/n', cev));
  await step('delete_n', () => call(c.remove.bind(c), R + '/n', -1));
  await dev.wait();
  await cev.wait();
  await step('getw_missing', () => call(w.getData.bind(w), R + '/gone', watchEvent('never')));
  await rmr(c, R);
  await closeClient(c);
  await closeClient(w);
}

async function ephemerals(addr) {
  const R = '/node_eph';
  const obs = await connect(addr);
  await rmr(obs, R);
  await step('create_root', () => call(obs.create.bind(obs), R, null, ACL, M.PERSISTENT));
  const owner = await connect(addr);
  await step('create_ephemeral', () => call(owner.create.bind(owner), R + '/e', Buffer.from('mine'), ACL, M.EPHEMERAL),
    (p) => ({ path: p }));
  await step('create_ephemeral_seq', () => call(owner.create.bind(owner), R + '/es-', null, ACL, M.EPHEMERAL_SEQUENTIAL),
    (p) => ({ path: p }));
  await step('create_child_of_ephemeral', () => call(owner.create.bind(owner), R + '/e/child', null, ACL, M.PERSISTENT));
  await step('stat_ephemeral', () => call(obs.getData.bind(obs), R + '/e'),
    (d, s) => ({ stat: stat(s), owner_is_session: s.ephemeralOwner.equals(owner.getSessionId()) }));
  const ev = watchEvent('event_deleted_on_close');
  await step('existsw_ephemeral', () => call(obs.exists.bind(obs), R + '/e', ev), (s) => ({ exists: !!s }));
  await closeClient(owner);
  await ev.wait();
  await step('children_after_close', () => call(obs.getChildren.bind(obs), R), (k) => ({ children: k }));
  await rmr(obs, R);
  await closeClient(obs);
}

const SCENARIOS = { crud, watches, ephemerals };

async function main() {
  const a = process.argv.slice(2);
  if (a.length === 1 && a[0] === '--list') {
    Object.keys(SCENARIOS).forEach((n) => console.log(n));
    return;
  }
  if (a.length !== 2 || !SCENARIOS[a[0]]) fail('usage: scenarios.js --list | SCENARIO HOST:PORT');
  setTimeout(() => fail('watchdog: scenario took longer than 90s'), 90000).unref();
  await SCENARIOS[a[0]](a[1]);
  process.exit(0);
}

main().catch((e) => fail(e && e.stack ? e.stack : String(e)));
