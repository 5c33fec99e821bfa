'use strict';
// gateway.js: the Node.js peer of herd's push gateway (tools/pushbench). It
// speaks push gateway protocol version 1 (see tools/pushbench/README.md) the
// way a Node programmer would write it: node:http for HTTP, the `ws` package
// (noServer, upgrade handled by the HTTP server) for WebSocket, presence and
// rooms in Maps of Sets, one event loop.
//
//   npm ci --prefix BUILD_DIR (package.json and package-lock.json beside this)
//   NODE_PATH=BUILD_DIR/node_modules node gateway.js --port 0
//
// --workers is accepted and ignored (one event loop, as Node runs), as are
// --observer and --metrics (herd's observer only).
const http = require('node:http');
const { isUtf8 } = require('node:buffer');
const { WebSocketServer } = require('ws');

const MAX_QUEUED_FRAMES = 1000;
const MAX_QUEUED_BYTES = 1 << 20;
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

function usage(msg) {
  process.stderr.write(`gateway.js: ${msg}\nusage: gateway.js --port P [--bind ADDR] [--workers N] ` +
    '[--ping-interval-ms MS]\n       [--max-message-bytes N] [--max-connections N|infinity] ' +
    '[--observer PATH] [--metrics 127.0.0.1:PORT]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const cfg = { port: -1, bind: '127.0.0.1', pingMs: 25000, maxMessage: 65536, maxConns: Infinity };
  const int = (o, v, lo) => {
    if (!/^[0-9]+$/.test(v) || Number(v) < lo) usage(`${o} wants an integer >= ${lo}, got '${v}'`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i += 2) {
    const o = argv[i], v = argv[i + 1];
    if (v === undefined) usage(`missing value for ${o}`);
    switch (o) {
      case '--port': cfg.port = int(o, v, 0); if (cfg.port > 65535) usage('--port wants 0..65535'); break;
      case '--bind': if (!require('node:net').isIP(v)) usage('--bind wants a numeric IP address'); cfg.bind = v; break;
      case '--workers': int(o, v, 1); break;
      case '--ping-interval-ms': cfg.pingMs = int(o, v, 1); break;
      case '--max-message-bytes': cfg.maxMessage = int(o, v, 1); break;
      case '--max-connections': cfg.maxConns = v === 'infinity' ? Infinity : int(o, v, 0); break;
      case '--observer': case '--metrics': break;
      default: usage(`unknown option ${o}`);
    }
  }
  if (cfg.port < 0) usage('--port P is required');
  return cfg;
}

const cfg = parseArgs(process.argv.slice(2));
const users = new Map();  // user -> Set of sockets
const rooms = new Map();  // room -> Set of sockets
const all = new Set();
const stats = { pushed: 0, dropped: 0 };

function addTo(map, key, ws) {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(ws);
}

function removeFrom(map, key, ws) {
  const set = map.get(key);
  if (set && set.delete(ws) && set.size === 0) map.delete(key);
}

function forget(ws) {
  if (!all.delete(ws)) return;
  removeFrom(users, ws.user, ws);
  for (const room of ws.rooms) removeFrom(rooms, room, ws);
}

// Hands one text frame to ws. The send callback runs once the frame is
// written to the socket: until then it counts against the slow-consumer limit.
function enqueue(ws, data, bytes) {
  if (!all.has(ws)) return false;
  if (ws.queuedFrames + 1 > MAX_QUEUED_FRAMES || ws.queuedBytes + bytes > MAX_QUEUED_BYTES) {
    stats.dropped++;
    forget(ws);
    ws.close(1008, 'slow consumer');  // behind what is buffered: give the reader time
    setTimeout(() => ws.terminate(), 10000).unref();
    return false;
  }
  ws.queuedFrames++;
  ws.queuedBytes += bytes;
  ws.send(data, { binary: false }, () => { ws.queuedFrames--; ws.queuedBytes -= bytes; });
  return true;
}

function fanOut(set, data) {
  if (!set) return 0;
  const bytes = Buffer.byteLength(data);
  let n = 0;
  for (const ws of set) if (enqueue(ws, data, bytes)) n++;
  stats.pushed += n;
  return n;
}

function reply(ws, text) {
  if (all.has(ws)) ws.send(text);
}

function command(ws, line) {
  const sp = line.indexOf(' ');
  const verb = sp < 0 ? line : line.slice(0, sp);
  const rest = sp < 0 ? '' : line.slice(sp + 1);
  if (verb === 'join' || verb === 'leave') {
    if (!NAME.test(rest)) return reply(ws, 'error bad room name');
    if (verb === 'join') {
      ws.rooms.add(rest);
      addTo(rooms, rest, ws);
    } else if (ws.rooms.delete(rest)) {
      removeFrom(rooms, rest, ws);
    }
    return reply(ws, `ok ${verb} ${rest}`);
  }
  if (verb === 'say') {
    const sp2 = rest.indexOf(' ');
    const room = sp2 < 0 ? '' : rest.slice(0, sp2);
    if (!NAME.test(room)) return reply(ws, 'error usage: say <room> <text>');
    fanOut(rooms.get(room), `${room} ${ws.user} ${rest.slice(sp2 + 1)}`);
    return;
  }
  reply(ws, 'error unknown command');
}

// maxPayload makes ws close with 1009, and it closes non-UTF-8 text with 1007.
const wss = new WebSocketServer({ noServer: true, maxPayload: cfg.maxMessage, perMessageDeflate: false });

wss.on('connection', (ws, req, user) => {
  ws.user = user;
  ws.rooms = new Set();
  ws.queuedFrames = 0;
  ws.queuedBytes = 0;
  ws.lastSeen = ws.lastPing = Date.now();
  all.add(ws);
  addTo(users, user, ws);
  const seen = () => { ws.lastSeen = Date.now(); };
  ws.on('pong', seen);
  ws.on('ping', seen);  // ws answers pings with pongs itself
  ws.on('message', (data, isBinary) => {
    seen();
    if (isBinary) return ws.close(1003, 'binary frames are not accepted');
    command(ws, data.toString('utf8'));
  });
  ws.on('close', () => forget(ws));
  ws.on('error', () => forget(ws));
});

// One timer for every connection (the pattern ws's README gives): pings when
// due, and code 4000 for a connection silent for two intervals.
setInterval(() => {
  const now = Date.now();
  for (const ws of all) {
    if (now - ws.lastSeen >= 2 * cfg.pingMs) {
      forget(ws);
      ws.close(4000, 'no pong');
      setTimeout(() => ws.terminate(), 1000).unref();
    } else if (now - ws.lastPing >= cfg.pingMs) {
      ws.lastPing = now;
      ws.ping();
    }
  }
}, Math.max(10, cfg.pingMs / 4)).unref();

function send(res, status, type, body, extra) {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), ...extra });
  res.end(body);
}

function allow(req, res, method) {
  if (req.method === method) return true;
  send(res, 405, 'text/plain', 'method not allowed\n', { Allow: method });
  return false;
}

function push(req, res, map, key) {
  if (!NAME.test(key)) return send(res, 400, 'text/plain', 'bad name\n');
  const declared = Number(req.headers['content-length'] || 0);
  if (declared > cfg.maxMessage) {
    return send(res, 413, 'text/plain', 'body over the limit\n', { Connection: 'close' });
  }
  const chunks = [];
  let size = 0, over = false;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > cfg.maxMessage && !over) {
      over = true;
      send(res, 413, 'text/plain', 'body over the limit\n', { Connection: 'close' });
      req.destroy();
    }
    if (!over) chunks.push(chunk);
  });
  req.on('end', () => {
    if (over) return;
    const body = Buffer.concat(chunks);
    if (!isUtf8(body)) return send(res, 400, 'text/plain', 'body is not UTF-8\n');
    const n = fanOut(map.get(key), body.toString('utf8'));
    send(res, 200, 'application/json', `{"delivered":${n}}`);
  });
}

const server = http.createServer({
  maxHeaderSize: 8192,
  headersTimeout: 10000,           // then Node answers 408 and closes
  connectionsCheckingInterval: 500, // so that the 408 comes on time
  keepAliveTimeout: 300000,
  requestTimeout: 0,
}, (req, res) => {
  const path = req.url.split('?')[0];
  if (path === '/ws') {
    if (allow(req, res, 'GET')) send(res, 400, 'text/plain', 'not a WebSocket upgrade\n');
  } else if (path === '/healthz') {
    if (allow(req, res, 'GET')) send(res, 200, 'text/plain', 'ok');
  } else if (path === '/stats') {
    if (allow(req, res, 'GET')) {
      send(res, 200, 'application/json', JSON.stringify({ connections: all.size, users: users.size,
        rooms: rooms.size, pushed: stats.pushed, dropped: stats.dropped }));
    }
  } else if (path.startsWith('/push/user/')) {
    if (allow(req, res, 'POST')) push(req, res, users, path.slice('/push/user/'.length));
  } else if (path.startsWith('/push/room/')) {
    if (allow(req, res, 'POST')) push(req, res, rooms, path.slice('/push/room/'.length));
  } else {
    send(res, 404, 'text/plain', 'not found\n');
  }
});

function refuse(socket, status, text) {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n` +
    'Connection: close\r\n\r\n');
}

server.on('upgrade', (req, socket, head) => {
  const url = new URL(req.url, 'http://x');
  if (url.pathname !== '/ws') return refuse(socket, 404, 'Not Found');
  if (req.method !== 'GET') return refuse(socket, 405, 'Method Not Allowed');
  const user = url.searchParams.get('user') || '';
  if (!NAME.test(user)) return refuse(socket, 400, 'Bad Request');
  if (all.size >= cfg.maxConns) return refuse(socket, 503, 'Service Unavailable');
  // handleUpgrade answers 400 itself for a bad handshake.
  wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req, user));
});

function drain() {
  server.close(() => process.exit(0));  // stop accepting; in-flight responses finish
  server.closeIdleConnections();
  for (const ws of all) ws.close(1001, 'server shutting down');
  setTimeout(() => process.exit(0), 5000).unref();
  // Exit once every WebSocket has closed and the HTTP server is done.
  const check = setInterval(() => {
    if (wss.clients.size === 0 && all.size === 0) {
      clearInterval(check);
      server.closeAllConnections();
    }
  }, 50);
}
process.on('SIGTERM', drain);
process.on('SIGINT', drain);

server.listen(cfg.port, cfg.bind, () => {
  process.stdout.write(`listening on ${cfg.bind}:${server.address().port}\n`);
});
