// The page: controls, keyboard, playback and scenarios in and out. Every message,
// term and leadership comes from the WebAssembly module (bully-core's
// simulator), which also checks everything the user brings and words its
// errors; nothing here knows the protocol. It asks the module for frames and
// draws them (draw.js, panel.js) and puts errors next to their controls
// (notice.js).
import init, { WebSim } from './pkg/bully_web.js';
import { layout, drawNodes, drawMessages } from './draw.js';
import { drawPanel, setText } from './panel.js';
import { report, clear, dismiss, notify, sentence } from './notice.js';

const $ = (id) => document.getElementById(id);
const STORE = 'bully-scenario';
const FIELDS = ['n', 'algorithm', 'quorum', 'preemption', 'seed', 'loss'];
// Simulator events replayed per slice while a scenario loads: some 10 to 20 ms of
// work in the browser, then the page draws and answers before the next slice.
const SLICE = 10000;

let sim = null;
let frame = null;
let playing = false;
let lastTick = null;
let loading = null;
let limits = null;
let picked = [];
let lastLog = '';
let lastLogAt = 0;
const costs = { frame: 0, nodes: 0, messages: 0, panel: 0, advance: 0, log: 0, count: 0 };
const loads = [];

// Runs a call into the module: its error goes beside `where`'s control.
function attempt(where, call) {
  try {
    const result = call();
    clear(where);
    return result;
  } catch (error) {
    report(where, error);
    return undefined;
  }
}

function status(text) {
  setText('status', text);
}

function fields() {
  return {
    n: $('n').value, algorithm: $('algorithm').value, quorum: $('quorum').value,
    preemption: $('preemption').value, seed: $('seed').value, loss: $('loss').value,
  };
}

function showSettings(s) {
  $('n').value = String(s.n);
  $('algorithm').value = s.algorithm;
  $('quorum').value = s.quorum;
  $('preemption').value = s.preemption;
  $('seed').value = String(s.seed);
  $('loss').value = String(s.loss_percent);
  for (const field of FIELDS) clear(field);
}

function replace(next) {
  if (sim) sim.free();
  sim = next;
  picked = [];
  showPicking();
  frame = JSON.parse(sim.frame());
  layout(frame.nodes.length, clickNode);
  refresh(true);
}

// A fresh cluster from the fields; a wrong field keeps the cluster there is.
function newCluster() {
  const checked = JSON.parse(WebSim.checkFields(JSON.stringify(fields())));
  for (const field of FIELDS) clear(field);
  if (checked.errors) {
    for (const { field, message } of checked.errors) report(field, message, false);
    const list = checked.errors.map((e) => sentence(e.message)).join(' ');
    notify(`Not changed: ${list}`, checked.errors[0].field);
    return false;
  }
  const next = attempt('n', () => new WebSim(JSON.stringify(checked.settings)));
  if (!next) return false;
  cancelLoading();
  setPlaying(false);
  replace(next);
  status('');
  return true;
}

function act(action) {
  attempt('stage', () => sim.act(JSON.stringify(action)));
  refresh(true);
}

function clickNode(id) {
  if (!sim || loading) return;
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
  refresh(false);
}

function showPicking() {
  $('picking').textContent = picked.length ? `picked: ${picked.join(', ')}` : '';
}

// Reads a frame from the module and draws it; `full` also refreshes the log.
function refresh(full) {
  if (!sim) return;
  const t0 = performance.now();
  frame = JSON.parse(sim.frame());
  const t1 = performance.now();
  drawNodes(frame, picked);
  const t2 = performance.now();
  drawMessages(frame, $('show-heartbeats').checked);
  const t3 = performance.now();
  drawPanel(frame, playing);
  const t4 = performance.now();
  costs.frame += t1 - t0; costs.nodes += t2 - t1; costs.messages += t3 - t2; costs.panel += t4 - t3;
  costs.count++;
  // The log changes only with election traffic; rewriting thousands of lines
  // for every heartbeat would cost more than the rest of the frame.
  const electionTraffic = frame.flights.filter((m) => m.kind !== 'Heartbeat').length;
  const key = `${frame.election_messages}/${electionTraffic}/${frame.agreed}`;
  if (full || (key !== lastLog && performance.now() - lastLogAt > 500)) {
    const t = performance.now();
    const which = document.querySelector('input[name=log]:checked').value;
    $('log').value = which === 'paper' ? sim.paperLog() : sim.mermaid();
    costs.log += performance.now() - t;
    lastLog = key;
    lastLogAt = performance.now();
  }
}

function setPlaying(on) {
  playing = on && !loading;
  lastTick = null;
  if (sim && frame) drawPanel(frame, playing);
}

function togglePlay() {
  if (!sim || loading) return;
  setPlaying(!playing);
  status(playing ? 'Playing.' : 'Paused.');
}

// Times on the page are told in T_M, message times: one message time is the
// longest a message takes (the simulator's link delay).
function step() {
  if (!sim || loading) return;
  setPlaying(false);
  const moved = attempt('stage', () => sim.stepMessage());
  refresh(true);
  if (moved === false) {
    status('Nothing to step: the election is over. Play shows the heartbeats; crash a process to start another.');
  } else if (moved) {
    status(`Stepped to ${(frame.now_us / frame.delay_us).toFixed(2)} T_M.`);
  }
}

function half() {
  if (!sim || loading) return;
  setPlaying(false);
  attempt('stage', () => sim.advance(frame.delay_us / 2));
  refresh(true);
  status(`Half a message time on: ${(frame.now_us / frame.delay_us).toFixed(2)} T_M.`);
}

function runToEnd() {
  if (!sim || loading) return;
  setPlaying(false);
  const before = frame.now_us;
  const settled = attempt('stage', () => sim.runToEnd());
  refresh(true);
  const at = `${(frame.now_us / frame.delay_us).toFixed(2)} T_M`;
  if (settled === true) {
    status(`Settled at ${at}.`);
  } else if (settled === false && frame.now_us === before) {
    status('Nothing is happening: call an election, boot everyone, or click a process.');
  } else if (settled === false) {
    status(`Not settled by ${at}, the limit (the failover and settle bounds): the processes keep electing.`);
  }
}

function tick(time) {
  if (playing && sim && !loading) {
    if (lastTick !== null) {
      const realSeconds = Math.min(0.1, (time - lastTick) / 1000);
      const us = realSeconds * Number($('speed').value) * frame.delay_us;
      const t = performance.now();
      try {
        sim.advance(us);
      } catch (error) {
        // The page's clock ends (its time limit): stop, and say so.
        setPlaying(false);
        report('stage', error);
      }
      costs.advance += performance.now() - t;
    }
    lastTick = time;
    refresh(false);
  }
  requestAnimationFrame(tick);
}

// ----- scenarios in and out -----

// Checks `text` as a scenario and replays it in slices between frames, so a
// long one never blocks the page; the cluster there is stays until it is done.
function loadScenario(text, source, after = '') {
  clear('scenario');
  let next;
  try {
    next = WebSim.loadScenario(text);
  } catch (error) {
    report('scenario', `${source}: ${sentence(error)}${after}`);
    return;
  }
  cancelLoading();
  setPlaying(false);
  loading = { sim: next, source, after, started: performance.now(), slices: 0, longest: 0 };
  document.body.dataset.loading = 'true';
  $('loading').hidden = false;
  continueLoading(next);
}

function continueLoading(next) {
  if (!loading || loading.sim !== next) return;
  const t = performance.now();
  let done;
  try {
    done = next.catchUp(SLICE);
  } catch (error) {
    const { source, after } = loading;
    endLoading();
    next.free();
    report('scenario', `${source}: ${sentence(error)}${after}`);
    return;
  }
  loading.slices++;
  loading.longest = Math.max(loading.longest, performance.now() - t);
  if (done) {
    const { source, started, slices, longest } = loading;
    loads.push({ ms: performance.now() - started, slices, longest_slice_ms: longest });
    endLoading();
    showSettings(JSON.parse(next.scenario()).settings);
    replace(next);
    status(`${source} is loaded.`);
  } else {
    const share = next.loaded();
    setText('loading-text', `Replaying ${loading.source.replace(/^The /, 'the ')}: ${Math.round(share * 100)} %`);
    $('loading-bar').value = share;
    setTimeout(() => continueLoading(next), 0);
  }
}

function endLoading() {
  loading = null;
  delete document.body.dataset.loading;
  $('loading').hidden = true;
}

function cancelLoading() {
  if (!loading) return;
  loading.sim.free();
  endLoading();
  status('Loading cancelled: the cluster is as it was.');
}

// The scenario in the page's address; `atStart` when the page has just opened
// (with a fresh cluster), else the address changed under an open page.
function fromLink(atStart) {
  if (!location.hash.startsWith('#s=')) return;
  const instead = atStart === true ? ' A fresh cluster is shown instead.' : ' The cluster on the page is unchanged.';
  let text;
  try {
    text = decodeURIComponent(location.hash.slice(3));
  } catch {
    report('scenario', `The link's scenario is damaged: a %-escape in it does not decode, as when a link is cut off or changed.${instead}`);
    return;
  }
  loadScenario(text, "The link's scenario", instead);
}

function save() {
  const json = sim.scenario();
  $('scenario').value = json;
  try {
    localStorage.setItem(STORE, json);
  } catch {
    // A private window may refuse storage; the link still works.
  }
  const link = `${location.origin}${location.pathname}#s=${encodeURIComponent(json)}`;
  $('share').href = link;
  history.replaceState(null, '', link);
  status('Saved: the address bar and "link to share" rebuild this state.');
}

function download() {
  const text = `${sim.scenarioFile()}\n`;
  const s = JSON.parse(text).settings;
  const name = `bully-${s.algorithm}-n${s.n}-${Math.round(frame.now_us / frame.delay_us)}tm.json`;
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
  status(`Downloaded ${name}.`);
}

async function upload() {
  const file = $('upload').files[0];
  if (!file) return;
  $('upload').value = '';
  const source = `The file ${file.name}`;
  if (file.size > limits.max_scenario_bytes) {
    report('scenario', `${source} is ${file.size} bytes: a scenario file is at most ${limits.max_scenario_bytes} bytes (1 MiB)`);
    return;
  }
  let text;
  try {
    text = await file.text();
  } catch (error) {
    report('scenario', `${source} could not be read: ${sentence(error)}`);
    return;
  }
  loadScenario(text, source);
}

// The same scenario with a majority quorum: the split brain disappears.
function replayWithQuorum() {
  const scenario = JSON.parse(sim.scenario());
  scenario.settings.quorum = 'majority';
  loadScenario(JSON.stringify(scenario), 'The same scenario with a majority quorum');
}

function presets() {
  const titles = WebSim.presetTitles().split('\n');
  titles.forEach((title, index) => {
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = title;
    button.id = `preset-${index + 1}`;
    button.addEventListener('click', () => {
      const checked = JSON.parse(WebSim.checkFields(JSON.stringify({ ...fields(), n: '6' })));
      if (checked.errors) {
        for (const { field, message } of checked.errors) report(field, message);
        return;
      }
      const next = attempt('stage', () => WebSim.preset(index + 1, JSON.stringify(checked.settings)));
      if (next) {
        cancelLoading();
        $('n').value = '6';
        replace(next);
        setPlaying(true);
      }
    });
    $('presets').append(button);
  });
}

// ----- keyboard -----

function keys(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target instanceof Element ? event.target : document.body;
  if (event.key === 'Escape') {
    picked = [];
    showPicking();
    dismiss();
    return;
  }
  // Typing in a field, or a key the focused control handles itself.
  if (target.closest('textarea, select, input[type=text], input:not([type])')) return;
  if (target.closest('#nodes .node') && (event.key === 'Enter' || event.key === ' ')) return;
  if (event.key === ' ') {
    if (target.closest('button, a, input, summary, .node')) return;
    event.preventDefault();
    togglePlay();
    return;
  }
  const shortcut = { p: togglePlay, s: step, h: half, e: runToEnd, r: () => newCluster() }[event.key.toLowerCase()];
  if (shortcut) {
    event.preventDefault();
    shortcut();
  }
}

function wire() {
  for (const id of FIELDS) $(id).addEventListener('change', newCluster);
  $('new-cluster').addEventListener('click', newCluster);
  $('reset').addEventListener('click', newCluster);
  $('elect').addEventListener('click', () => {
    attempt('initiators', () => sim.electAll($('initiators').value));
    refresh(true);
  });
  $('start-all').addEventListener('click', () => act({ do: 'start_all' }));
  $('isolate').addEventListener('click', () => {
    if (picked.length) {
      act({ do: 'isolate', group: picked });
    } else {
      report('stage', 'Pick the processes to isolate first: choose "isolate a group", then click them (or press Enter on them)');
    }
    picked = [];
    showPicking();
    refresh(false);
  });
  $('heal').addEventListener('click', () => act({ do: 'heal' }));
  $('play').addEventListener('click', togglePlay);
  $('step').addEventListener('click', step);
  $('half').addEventListener('click', half);
  $('run-end').addEventListener('click', runToEnd);
  const speedLabel = () => { $('speed-label').textContent = `${$('speed').value} T_M/s`; };
  $('speed').addEventListener('input', speedLabel);
  speedLabel();
  $('show-heartbeats').addEventListener('change', () => refresh(false));
  for (const radio of document.querySelectorAll('input[name=log]')) {
    radio.addEventListener('change', () => refresh(true));
  }
  for (const radio of document.querySelectorAll('input[name=mode]')) {
    radio.addEventListener('change', () => { picked = []; showPicking(); refresh(false); });
  }
  $('copy-log').addEventListener('click', () => navigator.clipboard?.writeText($('log').value));
  $('save').addEventListener('click', save);
  $('download').addEventListener('click', download);
  $('upload').addEventListener('change', upload);
  $('load').addEventListener('click', () => {
    let text = $('scenario').value;
    let source = 'The pasted scenario';
    if (!text.trim()) {
      try {
        text = localStorage.getItem(STORE) || '';
        source = 'The scenario saved in this browser';
      } catch {
        text = '';
      }
    }
    loadScenario(text, source);
  });
  $('loading-cancel').addEventListener('click', cancelLoading);
  $('quorum-replay').addEventListener('click', replayWithQuorum);
  $('notice-close').addEventListener('click', dismiss);
  window.addEventListener('hashchange', () => fromLink(false));
  document.addEventListener('keydown', keys);
}

async function main() {
  try {
    await init();
  } catch (error) {
    notify(`The simulator could not start in this browser: ${sentence(error)}`);
    return;
  }
  limits = JSON.parse(WebSim.limits());
  wire();
  presets();
  // A working cluster first, so that a bad link leaves the page usable and its
  // error is not wiped by the fallback.
  if (!newCluster()) {
    showSettings({ n: 10, algorithm: 'classic', quorum: 'none', preemption: 'always', seed: 0, loss_percent: 0 });
    newCluster();
  }
  requestAnimationFrame(tick);
  fromLink(true);
  // For tests and the curious: the module's own view of the page's cluster.
  window.bully = {
    frame: () => sim.frame(),
    scenario: () => sim.scenario(),
    // Messages drawn in the last frame (no call into the module).
    drawn: () => frame.flights.length,
    // Scenarios loaded: milliseconds in all, slices, the longest slice.
    loads: () => loads.slice(),
    loading: () => loading !== null,
    // Milliseconds spent per refresh in each part, since the last call.
    costs: () => {
      const per = Object.fromEntries(Object.entries(costs).map(([k, v]) => [k, v / Math.max(1, costs.count)]));
      per.count = costs.count;
      for (const k of Object.keys(costs)) costs[k] = 0;
      return per;
    },
  };
  document.body.dataset.ready = 'true';
}

main();
