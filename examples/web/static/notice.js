// Errors where they belong: each message goes next to the control that caused
// it (marked invalid and described by it, for screen readers) and into a notice
// fixed at the top of the window, so it is seen wherever the page is scrolled.

const $ = (id) => document.getElementById(id);

// The control each place's message describes (the stage has none).
const CONTROLS = {
  n: 'n', algorithm: 'algorithm', quorum: 'quorum', preemption: 'preemption',
  seed: 'seed', loss: 'loss', initiators: 'initiators', scenario: 'scenario', stage: null,
};

let shownFor = null;

// An error's text, as a sentence.
export function sentence(error) {
  const text = String((error && error.message) || error || 'something went wrong');
  const first = text.charAt(0).toUpperCase() + text.slice(1);
  return /[.!?]$/.test(first) ? first : `${first}.`;
}

// Shows `message` beside `where`'s control; `toast` also puts it in the notice.
export function report(where, message, toast = true) {
  const text = sentence(message);
  const slot = $(`${where}-error`);
  if (slot) slot.textContent = text;
  const control = CONTROLS[where] && $(CONTROLS[where]);
  if (control) control.setAttribute('aria-invalid', 'true');
  if (toast) notify(text, where);
}

// Puts `text` in the notice at the top of the window.
export function notify(text, where = null) {
  $('notice-text').textContent = text;
  $('notice').hidden = false;
  shownFor = where;
}

// Clears `where`'s message (and the notice, if it was showing it).
export function clear(where) {
  const slot = $(`${where}-error`);
  if (slot && slot.textContent) slot.textContent = '';
  const control = CONTROLS[where] && $(CONTROLS[where]);
  if (control && control.hasAttribute('aria-invalid')) control.removeAttribute('aria-invalid');
  if (shownFor === where) dismiss();
}

export function dismiss() {
  $('notice').hidden = true;
  $('notice-text').textContent = '';
  shownFor = null;
}
