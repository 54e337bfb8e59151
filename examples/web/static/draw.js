// The stage: the processes on a circle (SVG, focusable, one button each) and the
// messages in flight (a canvas above them). Draws frames; knows no protocol.

const $ = (id) => document.getElementById(id);
export const SIZE = 640;
const CENTER = SIZE / 2;
const RADIUS = 260;
const SVG = 'http://www.w3.org/2000/svg';
export const COLORS = {
  Election: '#d9480f', Answer: '#1971c2', Coordinator: '#e0a800', Takeover: '#9c36b5',
  RingElection: '#0ca678', RingCoordinator: '#087f5b', Heartbeat: '#adb5bd',
  Ack: '#868e96', Resign: '#c2255c', Probe: '#495057', ProbeReply: '#343a40',
};

export const positions = new Map();
let radius = 22;
let drawnNetwork = '';

function setAttr(element, name, value) {
  if (element.getAttribute(name) !== value) element.setAttribute(name, value);
}

// Builds one focusable button per process, in id order (the Tab order).
// `activate(id)` runs on a click, Enter or Space; arrows move to the neighbours.
export function layout(n, activate) {
  const svg = $('nodes');
  svg.replaceChildren();
  positions.clear();
  drawnNetwork = '';
  setAttr(svg, 'aria-label',
    `The ${n} processes on a circle: Tab moves between them in id order, arrows to the neighbours`);
  const cuts = document.createElementNS(SVG, 'g');
  cuts.id = 'cuts';
  svg.append(cuts);
  const labels = document.createElementNS(SVG, 'g');
  labels.id = 'labels';
  radius = n > 32 ? 11 : n > 16 ? 16 : 22;
  const r = radius;
  for (let i = 0; i < n; i++) {
    const angle = -Math.PI / 2 + (2 * Math.PI * i) / n;
    const cos = Math.cos(angle);
    const sin = Math.sin(angle);
    const x = CENTER + RADIUS * cos;
    const y = CENTER + RADIUS * sin;
    const id = i + 1;
    positions.set(id, { x, y });
    const g = document.createElementNS(SVG, 'g');
    g.setAttribute('class', 'node');
    g.dataset.id = id;
    g.setAttribute('tabindex', '0');
    g.setAttribute('role', 'button');
    g.setAttribute('aria-label', `process ${id}`);
    g.setAttribute('transform', `translate(${x.toFixed(2)} ${y.toFixed(2)})`);
    // The term goes inside the ring, towards the centre: below the crown, and
    // clear of the neighbours' labels even with 64 processes.
    const inward = r + 9;
    const anchor = cos > 0.35 ? 'end' : cos < -0.35 ? 'start' : 'middle';
    const fontSize = n > 32 ? 9 : 10;
    g.innerHTML =
      `<circle class="focus" r="${r + 5}"></circle>` +
      `<circle class="body" r="${r}"></circle>` +
      `<path class="crown" transform="translate(0 ${-r - 4}) scale(${r / 22})" ` +
      `d="M-14 0 L-16 -16 L-7 -7 L0 -19 L7 -7 L16 -16 L14 0 Z"></path>`;
    // The id and the term are drawn for the eye in a layer of their own: the
    // button's name says them (and the role) for a screen reader, and a button
    // whose visible text differed from its name would confuse speech input.
    const text = document.createElementNS(SVG, 'g');
    text.setAttribute('class', 'label');
    text.dataset.label = id;
    text.setAttribute('aria-hidden', 'true');
    text.setAttribute('transform', g.getAttribute('transform'));
    text.innerHTML =
      `<text class="id" dy="0.35em" font-size="${Math.max(9, r * 0.8)}">${id}</text>` +
      `<text class="term" x="${(-inward * cos).toFixed(2)}" y="${(-inward * sin).toFixed(2)}" ` +
      `text-anchor="${anchor}" dominant-baseline="central" font-size="${fontSize}"></text>`;
    labels.append(text);
    g.addEventListener('click', () => activate(id));
    g.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        event.stopPropagation();
        activate(id);
      } else if (['ArrowRight', 'ArrowDown', 'ArrowLeft', 'ArrowUp'].includes(event.key)) {
        event.preventDefault();
        const next = event.key === 'ArrowRight' || event.key === 'ArrowDown' ? id % n + 1 : (id + n - 2) % n + 1;
        svg.querySelector(`g.node[data-id="${next}"]`)?.focus();
      }
    });
    svg.append(g);
  }
  svg.append(labels);
}

// What a screen reader says for a process: "process 7, follower, term 3".
function spoken(node, crowned, picked) {
  let text = `process ${node.id}, `;
  text += node.up ? `${node.role}, term ${node.term}` : 'crashed';
  if (node.up && crowned && node.role !== 'leader') text += ', agreed leader';
  if (node.initiator) text += ', initiator';
  if (picked) text += ', picked';
  return text;
}

export function drawNodes(frame, picked) {
  const small = frame.nodes.length > 32;
  for (const node of frame.nodes) {
    const g = document.querySelector(`#nodes g[data-id="${node.id}"]`);
    if (!g) continue;
    const crowned = frame.agreed === node.id || (node.role === 'leader' && frame.agreed === null);
    const isPicked = picked.includes(node.id);
    setAttr(g, 'class', `node ${node.role}${node.initiator ? ' initiator' : ''}` +
      `${crowned ? ' crowned' : ''}${isPicked ? ' picked' : ''}`);
    setAttr(g, 'data-role', node.role);
    setAttr(g, 'aria-label', spoken(node, crowned, isPicked));
    const text = document.querySelector(`#labels g[data-label="${node.id}"]`);
    setAttr(text, 'class', node.up ? 'label' : 'label down');
    const term = text.querySelector('.term');
    const label = node.up ? `t${node.term}` : small ? '✕' : 'down';
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
      ring.setAttribute('r', radius + 8 + 4 * index);
      ring.setAttribute('class', 'group');
      cuts.append(ring);
    }
  });
}

// The messages on their way, above the processes: each from the rim of its
// sender's circle to the rim of its addressee's, so one sent this instant is
// seen leaving rather than hidden under the circle.
export function drawMessages(frame, heartbeats) {
  const canvas = $('messages');
  const ctx = canvas.getContext('2d');
  ctx.clearRect(0, 0, SIZE, SIZE);
  const labels = frame.flights.length < 150;
  // One path per kind: thousands of messages in flight (64 booting) stay cheap.
  const byKind = new Map();
  for (const m of frame.flights) {
    if (!heartbeats && m.kind === 'Heartbeat') continue;
    const a = positions.get(m.from);
    const b = positions.get(m.to);
    if (!a || !b) continue;
    const dx = b.x - a.x;
    const dy = b.y - a.y;
    const length = Math.max(1, Math.hypot(dx, dy));
    const rim = Math.min(radius, length / 2) / length;
    const start = { x: a.x + dx * rim, y: a.y + dy * rim };
    const end = { x: b.x - dx * rim, y: b.y - dy * rim };
    const span = Math.max(1, m.arrives_us - m.sent_us);
    const t = Math.min(1, Math.max(0, (frame.now_us - m.sent_us) / span));
    if (!byKind.has(m.kind)) byKind.set(m.kind, []);
    byKind.get(m.kind).push({
      start, x: start.x + (end.x - start.x) * t, y: start.y + (end.y - start.y) * t, term: m.term,
    });
  }
  ctx.font = '10px sans-serif';
  for (const [kind, dots] of byKind) {
    const color = COLORS[kind] || '#000';
    const size = kind === 'Heartbeat' ? 3 : 5;
    ctx.strokeStyle = color;
    ctx.globalAlpha = kind === 'Heartbeat' ? 0.25 : 0.35;
    ctx.beginPath();
    for (const d of dots) { ctx.moveTo(d.start.x, d.start.y); ctx.lineTo(d.x, d.y); }
    ctx.stroke();
    ctx.globalAlpha = 1;
    ctx.fillStyle = color;
    ctx.beginPath();
    for (const d of dots) { ctx.moveTo(d.x + size, d.y); ctx.arc(d.x, d.y, size, 0, 2 * Math.PI); }
    ctx.fill();
    if (labels && kind !== 'Heartbeat') {
      ctx.fillStyle = '#212529';
      for (const d of dots) ctx.fillText(`${kind[0]}${d.term}`, d.x + 6, d.y - 6);
    }
  }
}
