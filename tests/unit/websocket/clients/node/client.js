// Conformance against herd's echo WebSocket server with Node's `ws` client:
// text, binary, large, fragmented, ping, and the close handshake both ways.
// Usage: node client.js PORT (NODE_PATH points at the installed ws).
// Exit 0 when every case passes; one line per case; bounded by a timer.
'use strict';
const WebSocket = require('ws');
const port = process.argv[2];
const url = `ws://127.0.0.1:${port}/ws`;
const failures = [];
const check = (name, ok) => {
  console.log((ok ? 'ok ' : 'FAIL ') + name);
  if (!ok) failures.push(name);
};
setTimeout(() => { console.log('FAIL timeout'); process.exit(1); }, 60000).unref();

function open() {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { maxPayload: 1 << 21 });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}
const nextMessage = (ws) => new Promise((resolve) => ws.once('message', (data, isBinary) => resolve({ data, isBinary })));
const closed = (ws) => new Promise((resolve) => ws.once('close', (code) => resolve(code)));

(async () => {
  let ws = await open();
  ws.send('hello');
  let m = await nextMessage(ws);
  check('text', !m.isBinary && m.data.toString() === 'hello');
  const blob = Buffer.alloc(100 * 1024, 7);
  ws.send(blob);
  m = await nextMessage(ws);
  check('binary 100 KiB', m.isBinary && Buffer.compare(m.data, blob) === 0);
  const text = 'κόσμε '.repeat(30000);
  ws.send(text);
  m = await nextMessage(ws);
  check('large UTF-8 text', m.data.toString() === text);
  // Fragments: fin false, then the last one; a multi-byte character split.
  const k = Buffer.from('κ');
  ws.send(Buffer.concat([Buffer.from('frag '), k.subarray(0, 1)]), { binary: false, fin: false });
  ws.send(Buffer.concat([k.subarray(1), Buffer.from(' end')]), { binary: false, fin: true });
  m = await nextMessage(ws);
  check('fragmented', m.data.toString() === 'frag κ end');
  const pong = new Promise((resolve) => ws.once('pong', (d) => resolve(d.toString())));
  ws.ping('are you there');
  check('ping answered', (await pong) === 'are you there');
  let c = closed(ws);
  ws.close(1000, 'bye');
  check('close 1000 echoed', (await c) === 1000);

  ws = await open();
  c = closed(ws);
  ws.send('close 4001');
  check('server close 4001', (await c) === 4001);

  ws = await open();
  c = closed(ws);
  ws.send(Buffer.alloc((1 << 20) + 1));
  check('over max_message: 1009', (await c) === 1009);
  process.exit(failures.length ? 1 : 0);
})().catch((e) => { console.log('FAIL ' + e); process.exit(1); });
