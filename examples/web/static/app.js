// The page: controls, drawing and clicks. Every message, term and leadership comes
// from the WebAssembly module (bully-core's simulator); nothing here knows the
// protocol. It asks the module for frames and draws them.
import init, { WebSim } from './pkg/bully_web.js';

const $ = (id) => document.getElementById(id);
const SIZE = 640;
const CENTER = SIZE / 2;
const RADIUS = 260;
const SVG = 'http://www.w3.org/2000/svg';
const STORE = 'bully-scenario';
const COLORS = {
  Election: '#d9480f', Answer: '#1971c2', Coordinator: '#e0a800', Takeover: '#9c36b5',
  RingElection: '#0ca678', RingCoordinator: '#087f5b', Heartbeat: '#adb5bd',
  Ack: '#868e96', Resign: '#c2255c',
};

let sim = null;
let frame = null;
let playing = false;
let lastTick = null;
const costs = { frame: 0, nodes: 0, messages: 0, panel: 0, advance: 0, log: 0, count: 0 };
let lastLog = '';
let drawnNetwork = '';
let drawnCounts = '';
let lastLogAt = 0;
let picked = [];
const positions = new Map();

function settings() {
  return {
    n: Number($('n').value),
    algorithm: $('algorithm').value,
    quorum: $('quorum').value,
    preemption: $('preemption').value,
    seed: Number($('seed').value),
    loss_percent: Number($('loss').value),
  };
}

function showSettings(s) {
  $('n').value = s.n;
  $('algorithm').value = s.algorithm;
  $('quorum').value = s.quorum;
  $('preemption').value = s.preemption;
  $('seed').value = s.seed;
  $('loss').value = s.loss_percent;
}

// Writes only what changed: restyling 64 processes and the panel every frame
// costs the browser more than the simulation does.
function setText(id, text) {
  const element = $(id);
  if (element.textContent !== text) element.textContent = text;
}

function setAttr(element, name, value) {
  if (element.getAttribute(name) !== value) element.setAttribute(name, value);
}

// Runs a call into the module; shows its error instead of throwing.
function attempt(call) {
  try {
    const result = call();
    $('error').textContent = '';
    return result;
  } catch (error) {
    $('error').textContent = String(error.message || error);
    return undefined;
  }
}

function replace(next) {
  if (!next) return;
  if (sim) sim.free();
  sim = next;
  picked = [];
  layout();
  refresh(true);
}

function newCluster() {
  setPlaying(false);
  replace(attempt(() => new WebSim(JSON.stringify(settings()))));
}

function act(action) {
  attempt(() => sim.act(JSON.stringify(action)));
  refresh(true);
}

function layout() {
  const n = JSON.parse(sim.frame()).nodes.length;
  const svg = $('nodes');
  svg.replaceChildren();
  positions.clear();
  drawnNetwork = '';
  const cuts = document.createElementNS(SVG, 'g');
  cuts.id = 'cuts';
  svg.append(cuts);
  const r = n > 32 ? 11 : n > 16 ? 16 : 22;
  for (let i = 0; i < n; i++) {
    const angle = -Math.PI / 2 + (2 * Math.PI * i) / n;
    const x = CENTER + RADIUS * Math.cos(angle);
    const y = CENTER + RADIUS * Math.sin(angle);
    const id = i + 1;
    positions.set(id, { x, y });
    const g = document.createElementNS(SVG, 'g');
    g.setAttribute('class', 'node');
    g.dataset.id = id;
    g.setAttribute('transform', `translate(${x} ${y})`);
    g.innerHTML =
      `<circle r="${r}"></circle>` +
      `<text class="id" dy="0.35em" font-size="${Math.max(9, r * 0.8)}">${id}</text>` +
      `<text class="term" dy="${r + 12}"></text>` +
      `<path class="crown" transform="translate(0 ${-r - 4}) scale(${r / 22})" ` +
      `d="M-14 0 L-16 -16 L-7 -7 L0 -19 L7 -7 L16 -16 L14 0 Z"></path>`;
    g.addEventListener('click', () => clickNode(id));
    svg.append(g);
  }
}

function clickNode(id) {
  const mode = document.querySelector('input[name=mode]:checked').value;
  const node = frame.nodes[id - 1];
  switch (mode) {
    case 'crash':
      act(node.up ? { do: 'crash', node: id } : { do: 'recover', node: id });
      break;
    case 'notice':
      act({ do: 'notice', node: id });
      break;
    case 'elect':
      act({ do: 'elect', node: id });
      break;
    case 'cut_both':
    case 'cut_one_way':
      picked.push(id);
      if (picked.length === 2) {
        const [a, b] = picked;
        picked = [];
        act(mode === 'cut_both' ? { do: 'cut_both', a, b } : { do: 'cut_one_way', from: a, to: b });
      }
      break;
    case 'isolate':
      if (!picked.includes(id)) picked.push(id);
      break;
  }
  showPicking();
}

function showPicking() {
  $('picking').textContent = picked.length ? `picked: ${picked.join(', ')}` : '';
}

// Reads a frame from the module and draws it; `full` also refreshes the log.
function refresh(full) {
  const t0 = performance.now();
  frame = JSON.parse(sim.frame());
  const t1 = performance.now();
  drawNodes();
  const t2 = performance.now();
  drawMessages();
  const t3 = performance.now();
  drawPanel();
  const t4 = performance.now();
  costs.frame += t1 - t0; costs.nodes += t2 - t1; costs.messages += t3 - t2; costs.panel += t4 - t3;
  costs.count++;
  // The log changes only with election traffic; rewriting thousands of lines
  // for every heartbeat would cost more than the rest of the frame.
  const electionTraffic = frame.flights.filter((m) => m.kind !== 'Heartbeat').length;
  const key = `${frame.election_messages}/${electionTraffic}/${frame.agreed}`;
  if (full || (key !== lastLog && performance.now() - lastLogAt > 500)) {
    const t = performance.now();
    drawLog();
    costs.log += performance.now() - t;
    lastLog = key;
    lastLogAt = performance.now();
  }
}

function drawNodes() {
  for (const node of frame.nodes) {
    const g = document.querySelector(`#nodes g[data-id="${node.id}"]`);
    if (!g) continue;
    const crowned = frame.agreed === node.id || (node.role === 'leader' && frame.agreed === null);
    setAttr(g, 'class', `node ${node.role}${node.initiator ? ' initiator' : ''}` +
      `${crowned ? ' crowned' : ''}${picked.includes(node.id) ? ' picked' : ''}`);
    setAttr(g, 'data-role', node.role);
    const term = g.querySelector('.term');
    const label = node.up ? `t${node.term}` : 'down';
    if (term.textContent !== label) term.textContent = label;
  }
  const network = JSON.stringify([frame.cuts, frame.groups]);
  if (network === drawnNetwork) return;
  drawnNetwork = network;
  const cuts = $('cuts');
  cuts.replaceChildren();
  for (const [from, to] of frame.cuts) {
    const a = positions.get(from);
    const b = positions.get(to);
    const line = document.createElementNS(SVG, 'line');
    line.setAttribute('x1', a.x); line.setAttribute('y1', a.y);
    line.setAttribute('x2', b.x); line.setAttribute('y2', b.y);
    line.setAttribute('class', 'cut');
    cuts.append(line);
  }
  frame.groups.forEach((group, index) => {
    for (const id of group) {
      const p = positions.get(id);
      const ring = document.createElementNS(SVG, 'circle');
      ring.setAttribute('cx', p.x); ring.setAttribute('cy', p.y);
      ring.setAttribute('r', 30 + 4 * index);
      ring.setAttribute('class', 'group');
      cuts.append(ring);
    }
  });
}

function drawMessages() {
  const canvas = $('messages');
  const ctx = canvas.getContext('2d');
  ctx.clearRect(0, 0, SIZE, SIZE);
  const heartbeats = $('show-heartbeats').checked;
  const labels = frame.flights.length < 150;
  // One path per kind: thousands of messages in flight (64 booting) stay cheap.
  const byKind = new Map();
  for (const m of frame.flights) {
    if (!heartbeats && m.kind === 'Heartbeat') continue;
    const a = positions.get(m.from);
    const b = positions.get(m.to);
    if (!a || !b) continue;
    const span = Math.max(1, m.arrives_us - m.sent_us);
    const t = Math.min(1, Math.max(0, (frame.now_us - m.sent_us) / span));
    if (!byKind.has(m.kind)) byKind.set(m.kind, []);
    byKind.get(m.kind).push({ a, x: a.x + (b.x - a.x) * t, y: a.y + (b.y - a.y) * t, term: m.term });
  }
  ctx.font = '10px sans-serif';
  for (const [kind, dots] of byKind) {
    const color = COLORS[kind] || '#000';
    const radius = kind === 'Heartbeat' ? 3 : 5;
    ctx.strokeStyle = color;
    ctx.globalAlpha = kind === 'Heartbeat' ? 0.25 : 0.35;
    ctx.beginPath();
    for (const d of dots) { ctx.moveTo(d.a.x, d.a.y); ctx.lineTo(d.x, d.y); }
    ctx.stroke();
    ctx.globalAlpha = 1;
    ctx.fillStyle = color;
    ctx.beginPath();
    for (const d of dots) { ctx.moveTo(d.x + radius, d.y); ctx.arc(d.x, d.y, radius, 0, 2 * Math.PI); }
    ctx.fill();
    if (labels && kind !== 'Heartbeat') {
      ctx.fillStyle = '#212529';
      for (const d of dots) ctx.fillText(`${kind[0]}${d.term}`, d.x + 6, d.y - 6);
    }
  }
}

function drawPanel() {
  const delay = frame.delay_us;
  setText('now', (frame.now_us / delay).toFixed(2));
  setText('coordinator', frame.agreed === null
    ? (frame.leaders.length ? `none agreed (leading: ${frame.leaders.join(', ')})` : 'none')
    : String(frame.agreed));
  setText('delays', frame.delays.toFixed(2));
  setText('depth', String(frame.depth));
  setText('in-flight', String(frame.flights.length));
  setText('violations', String(frame.violations));
  const counts = JSON.stringify(frame.counts);
  if (counts !== drawnCounts) {
    drawnCounts = counts;
    const body = $('counts').querySelector('tbody');
    body.replaceChildren();
    for (const [kind, count] of frame.counts) {
      const row = document.createElement('tr');
      row.id = `count-${kind}`;
      row.innerHTML = `<th><span class="swatch ${kind}"></span>${kind}</th><td>${count}</td>`;
      body.append(row);
    }
  }
  setText('total', String(frame.election_messages));
  setText('lost', String(frame.lost));
  const t1 = frame.table_1;
  if ($('table1').hidden !== !t1) $('table1').hidden = !t1;
  if (t1) {
    setText('t1-n', String(t1.n));
    setText('t1-p', String(t1.p));
    setText('t1-measured', String(frame.election_messages));
    setText('t1-formula', t1.formula);
    setText('t1-expected', String(t1.expected));
    setText('t1-paper', t1.paper === null ? 'no row (P = 1 only)' : String(t1.paper));
    setText('t1-source', t1.source);
  }
  setText('play', playing ? 'Pause' : 'Play');
}

function drawLog() {
  const which = document.querySelector('input[name=log]:checked').value;
  $('log').value = which === 'paper' ? sim.paperLog() : sim.mermaid();
}

function setPlaying(on) {
  playing = on;
  lastTick = null;
  if (sim) drawPanel();
}

function tick(time) {
  if (playing && sim) {
    if (lastTick !== null) {
      const realSeconds = Math.min(0.1, (time - lastTick) / 1000);
      const us = realSeconds * Number($('speed').value) * frame.delay_us;
      const t = performance.now();
      attempt(() => sim.advance(us));
      costs.advance += performance.now() - t;
    }
    lastTick = time;
    refresh(false);
  }
  requestAnimationFrame(tick);
}

function save() {
  const json = sim.scenario();
  $('scenario').value = json;
  localStorage.setItem(STORE, json);
  const link = `${location.origin}${location.pathname}#s=${encodeURIComponent(json)}`;
  $('share').href = link;
  history.replaceState(null, '', link);
}

function load(json) {
  const next = attempt(() => WebSim.fromScenario(json));
  if (next) {
    setPlaying(false);
    // The module's settings, with the defaults a hand-written scenario leaves out.
    showSettings(JSON.parse(next.scenario()).settings);
    replace(next);
  }
}

function presets() {
  const titles = WebSim.presetTitles().split('\n');
  titles.forEach((title, index) => {
    const button = document.createElement('button');
    button.textContent = title;
    button.id = `preset-${index + 1}`;
    button.addEventListener('click', () => {
      setPlaying(false);
      const next = attempt(() => WebSim.preset(index + 1, JSON.stringify(settings())));
      if (next) {
        $('n').value = 6;
        replace(next);
        setPlaying(true);
      }
    });
    $('presets').append(button);
  });
}

function wire() {
  for (const id of ['n', 'algorithm', 'quorum', 'preemption', 'seed', 'loss']) {
    $(id).addEventListener('change', newCluster);
  }
  $('new-cluster').addEventListener('click', newCluster);
  $('elect').addEventListener('click', () => {
    const ids = $('initiators').value.split(/[\s,]+/).filter(Boolean).map(Number);
    for (const node of ids) attempt(() => sim.act(JSON.stringify({ do: 'elect', node })));
    refresh(true);
  });
  $('start-all').addEventListener('click', () => act({ do: 'start_all' }));
  $('isolate').addEventListener('click', () => {
    if (picked.length) act({ do: 'isolate', group: picked });
    picked = [];
    showPicking();
  });
  $('heal').addEventListener('click', () => act({ do: 'heal' }));
  $('play').addEventListener('click', () => setPlaying(!playing));
  $('step').addEventListener('click', () => {
    setPlaying(false);
    attempt(() => sim.stepMessage());
    refresh(true);
  });
  $('half').addEventListener('click', () => {
    setPlaying(false);
    attempt(() => sim.advance(frame.delay_us / 2));
    refresh(true);
  });
  $('run-end').addEventListener('click', () => {
    setPlaying(false);
    attempt(() => sim.runToEnd());
    refresh(true);
  });
  const speedLabel = () => { $('speed-label').textContent = $('speed').value; };
  $('speed').addEventListener('input', speedLabel);
  speedLabel();
  $('show-heartbeats').addEventListener('change', () => refresh(false));
  for (const radio of document.querySelectorAll('input[name=log]')) {
    radio.addEventListener('change', drawLog);
  }
  for (const radio of document.querySelectorAll('input[name=mode]')) {
    radio.addEventListener('change', () => { picked = []; showPicking(); });
  }
  $('copy-log').addEventListener('click', () => navigator.clipboard?.writeText($('log').value));
  $('save').addEventListener('click', save);
  $('load').addEventListener('click', () => {
    const json = $('scenario').value.trim() || localStorage.getItem(STORE);
    if (json) load(json);
  });
}

async function main() {
  await init();
  wire();
  presets();
  const shared = location.hash.startsWith('#s=') ? decodeURIComponent(location.hash.slice(3)) : null;
  $('scenario').value = '';
  if (shared) {
    load(shared);
  }
  if (!sim) newCluster();
  // For tests and the curious: the module's own view of the page's cluster.
  window.bully = {
    frame: () => sim.frame(),
    scenario: () => sim.scenario(),
    // Messages drawn in the last frame (no call into the module).
    drawn: () => frame.flights.length,
    // Milliseconds spent per refresh in each part, since the last call.
    costs: () => {
      const per = Object.fromEntries(Object.entries(costs).map(([k, v]) => [k, v / Math.max(1, costs.count)]));
      per.count = costs.count;
      for (const k of Object.keys(costs)) costs[k] = 0;
      return per;
    },
  };
  document.body.dataset.ready = 'true';
  requestAnimationFrame(tick);
}

main();
