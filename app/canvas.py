"""A drawing canvas: strokes drawn with a mouse, a pen or a finger, sent to the server as polylines.

Streamlit has no drawing widget, and streamlit-drawable-canvas is unmaintained (no release since 2022, built on the
deprecated components.v1 iframe API), so this is a small st.components.v2 component of our own: a square <canvas>
with Pointer Events (one code path for mouse, pen and touch; touch-action: none, so a finger draws instead of
scrolling), an Undo and a Clear button. It sends the strokes 0.6 s after the pen is lifted or Undo or Clear is
pressed, unless drawing goes on meanwhile (a "4" drawn in two strokes, or a digit drawn right after Clear, is read
once). The canvas says how many points it last sent (data-sent), so a test can tell which drawing was read. Points
are in canvas pixels (y down), rounded to 0.1 px; what the server does with them (model.vision.drawing) does not
depend on the canvas's size. The strokes are kept in session state and handed back to the canvas, so a drawing
outlives a rerun and a visit to another page.
"""
from __future__ import annotations

from typing import Any

import streamlit as st

from model.vision.drawing import MAX_POINTS, MAX_STROKES

CANVAS_PX = 280  # the canvas's side in CSS pixels: large enough for a finger, small enough for a 720-px screen
SEND_DELAY_MS = 600

_HTML = f"""<div class="ae-canvas">
  <canvas data-ae-canvas width="{CANVAS_PX}" height="{CANVAS_PX}" aria-label="Drawing area: draw one digit"></canvas>
  <div class="ae-canvas-buttons">
    <button type="button" data-ae-undo>Undo</button>
    <button type="button" data-ae-clear>Clear</button>
  </div>
</div>"""

_CSS = f""".ae-canvas {{display: flex; flex-direction: column; gap: 6px; width: {CANVAS_PX}px}}
.ae-canvas canvas {{width: {CANVAS_PX}px; height: {CANVAS_PX}px; background: #fff; border: 2px solid #888;
  border-radius: 6px; touch-action: none; cursor: crosshair}}
.ae-canvas-buttons {{display: flex; gap: 8px}}
.ae-canvas-buttons button {{flex: 1; padding: 6px 0; border: 1px solid #bbb; border-radius: 6px; background: #fff;
  font: inherit; cursor: pointer}}"""

_JS = f"""export default function(component) {{
  const {{ parentElement, setStateValue, data }} = component;
  const canvas = parentElement.querySelector('canvas');
  // Called again on every rerun with the same canvas: the previous call's listeners go first, or each stroke
  // would be recorded once per call.
  if (canvas.__cleanup) canvas.__cleanup();
  const ctx = canvas.getContext('2d');
  const ratio = window.devicePixelRatio || 1;
  canvas.width = {CANVAS_PX} * ratio;
  canvas.height = {CANVAS_PX} * ratio;
  ctx.scale(ratio, ratio);
  // The strokes live on the canvas element across re-renders; a fresh canvas starts from what the server holds.
  if (!canvas.__strokes) canvas.__strokes = (data && Array.isArray(data.strokes)) ? data.strokes : [];
  let timer = null;  // the stroke being drawn is canvas.__current: a rerun mid-stroke keeps it
  const total = () => canvas.__strokes.reduce((n, s) => n + s.length, 0);
  const draw = () => {{
    ctx.clearRect(0, 0, {CANVAS_PX}, {CANVAS_PX});
    ctx.lineWidth = 14; ctx.lineCap = 'round'; ctx.lineJoin = 'round'; ctx.strokeStyle = '#111';
    for (const stroke of canvas.__strokes) {{
      if (!stroke.length) continue;
      ctx.beginPath();
      ctx.moveTo(stroke[0][0], stroke[0][1]);
      for (const [x, y] of stroke.slice(1)) ctx.lineTo(x, y);
      if (stroke.length === 1) ctx.lineTo(stroke[0][0] + 0.1, stroke[0][1]);
      ctx.stroke();
    }}
  }};
  const send = () => {{
    clearTimeout(timer); timer = null;
    canvas.dataset.sent = String(total());
    setStateValue('strokes', canvas.__strokes);
  }};
  const later = () => {{ clearTimeout(timer); timer = setTimeout(send, {SEND_DELAY_MS}); }};
  const point = (event) => {{
    const box = canvas.getBoundingClientRect();
    const x = Math.min(Math.max(event.clientX - box.left, 0), {CANVAS_PX});
    const y = Math.min(Math.max(event.clientY - box.top, 0), {CANVAS_PX});
    return [Math.round(x * 10) / 10, Math.round(y * 10) / 10];
  }};
  const down = (event) => {{
    if (canvas.__strokes.length >= {MAX_STROKES} || total() >= {MAX_POINTS}) return;
    event.preventDefault();
    canvas.setPointerCapture(event.pointerId);
    clearTimeout(timer);
    canvas.__current = [point(event)];
    canvas.__strokes.push(canvas.__current);
    draw();
  }};
  const move = (event) => {{
    const current = canvas.__current;
    if (!current || total() >= {MAX_POINTS}) return;
    const [x, y] = point(event), [px, py] = current[current.length - 1];
    if (Math.hypot(x - px, y - py) < 1.5) return;
    current.push([x, y]);
    draw();
  }};
  const up = () => {{ if (canvas.__current) {{ canvas.__current = null; later(); }} }};
  const undo = () => {{ canvas.__strokes.pop(); draw(); later(); }};
  const clear = () => {{ canvas.__strokes = []; draw(); later(); }};
  const undoButton = parentElement.querySelector('[data-ae-undo]');
  const clearButton = parentElement.querySelector('[data-ae-clear]');
  canvas.addEventListener('pointerdown', down);
  canvas.addEventListener('pointermove', move);
  canvas.addEventListener('pointerup', up);
  canvas.addEventListener('pointercancel', up);
  undoButton.addEventListener('click', undo);
  clearButton.addEventListener('click', clear);
  draw();
  const cleanup = () => {{
    canvas.__cleanup = null;
    canvas.removeEventListener('pointerdown', down);
    canvas.removeEventListener('pointermove', move);
    canvas.removeEventListener('pointerup', up);
    canvas.removeEventListener('pointercancel', up);
    undoButton.removeEventListener('click', undo);
    clearButton.removeEventListener('click', clear);
    if (timer) send();  // a stroke not sent yet is not lost
  }};
  canvas.__cleanup = cleanup;
  return cleanup;
}}"""

_canvas_component = st.components.v2.component("ae_canvas", html=_HTML, css=_CSS, js=_JS)


def point_count(strokes: list[Any]) -> int:
    """How many points the strokes hold (what the canvas reports as data-sent)."""
    return sum(len(s) for s in strokes if isinstance(s, list))


def drawing_canvas(key: str) -> list[Any]:
    """Draw the canvas and return its strokes as the browser sent them (unchecked: visitor-sent, see
    model.vision.drawing.check_strokes), kept in session state under ``key`` across reruns and pages."""
    held = f"{key}_strokes"
    result = _canvas_component(key=key, data={"strokes": st.session_state.get(held, [])},
                               on_strokes_change=lambda: None)
    strokes = getattr(result, "strokes", None)
    if isinstance(strokes, list):
        st.session_state[held] = strokes
    value = st.session_state.get(held, [])
    return value if isinstance(value, list) else []
