// The measurements panel: time, leaders and what their number means, the counts
// by kind, and the sources' formulas beside the measured count. Writes only what
// changed: restyling the panel every frame costs more than the simulation.

const $ = (id) => document.getElementById(id);

let drawnCounts = '';
let drawnExplanation = '';

export function setText(id, text) {
  const element = $(id);
  if (element.textContent !== text) element.textContent = text;
}

function cell(tag, text, attributes = {}) {
  const element = document.createElement(tag);
  element.textContent = text;
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  return element;
}

export function drawPanel(frame, playing) {
  setText('explain-running', frame.explanation && !frame.settled
    ? 'The election is still running: the count grows until it settles (Run to the end).' : '');
  const delay = frame.delay_us;
  setText('now', (frame.now_us / delay).toFixed(2));
  setText('coordinator', frame.agreed === null
    ? (frame.leaders.length ? `none agreed (leading: ${frame.leaders.join(', ')})` : 'none')
    : String(frame.agreed));
  const leaders = frame.leadership.leaders;
  setText('leaders', leaders.length > 1 ? `${leaders.length} (${leaders.join(' and ')})` : String(leaders.length));
  const note = frame.leadership.note;
  if ($('leadership').hidden !== !note) $('leadership').hidden = !note;
  setText('leaders-note', note);
  const replay = !frame.leadership.split_brain;
  if ($('quorum-replay').hidden !== replay) $('quorum-replay').hidden = replay;
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
      const head = cell('th', kind, { scope: 'row' });
      const swatch = document.createElement('span');
      swatch.className = `swatch ${kind}`;
      head.prepend(swatch);
      row.append(head, cell('td', String(count)));
      body.append(row);
    }
  }
  setText('total', String(frame.election_messages));
  setText('lost', String(frame.lost));
  drawExplanation(frame.explanation, frame.settled);
  setText('play-label', playing ? 'Pause' : 'Play');
}

// The measured count, then each formula that applies with its source, then why
// they differ and the sources' titles. While the election runs the count is not
// final, so no formula is marked as differing yet.
function drawExplanation(explained, settled) {
  const key = JSON.stringify([explained, settled]);
  if (key === drawnExplanation) return;
  drawnExplanation = key;
  const box = $('explain');
  box.hidden = !explained;
  if (!explained) return;
  setText('explain-title', explained.title);
  setText('explain-setting', `${explained.setting}.`);
  const body = $('explain-table').querySelector('tbody');
  body.replaceChildren();
  const line = (source, formula, value, className) => {
    const row = document.createElement('tr');
    if (className) row.className = className;
    const head = document.createElement('th');
    head.scope = 'row';
    head.append(cell('span', source, { class: 'source' }), document.createElement('br'),
      cell('span', formula, { class: 'formula' }));
    row.append(head, value);
    body.append(row);
    return row;
  };
  line('measured here', 'election messages, heartbeats left out',
    cell('td', String(explained.measured)), '').id = 'explain-measured';
  for (const formula of explained.rows) {
    const value = cell('td', String(formula.value), { class: 'value' });
    const differs = settled && !formula.matches;
    if (differs) {
      value.prepend('≠ ');
      value.append(cell('span', ' (differs from the measured count)', { class: 'visually-hidden' }));
    }
    line(formula.source, formula.formula, value,
      differs ? 'formula-row differs' : 'formula-row matches');
  }
  setText('explain-why', explained.why || '');
  setText('explain-sources', explained.sources.length ? `Sources: ${explained.sources.join('; ')}.` : '');
}
