"""The little JavaScript the app runs in the page: keyboard shortcuts that press Streamlit buttons, a box with a
link to the current view, and one history entry per view.

Both are st.html with unsafe_allow_javascript (no iframe, so they reach the page itself) and our own constant
scripts; user text only enters as escaped attribute values. Not streamlit-shortcuts 1.2.2: in a Streamlit 1.67
browser test its keys also fired while typing in the sentence box (and swallowed the caret move), a binding
left over from the previous page caught the key first and stopped it, so ArrowRight did nothing on the next
page, and it renders through the deprecated components.v1.html. Here one listener is installed per browser
tab and reads the bindings of the elements now on the page at each key press, so nothing outlives its page.
"""
from __future__ import annotations

import html
import json

import streamlit as st

# Installed once per tab. Keys pressed in a text field, a select box or a slider belong to that widget; a key
# with Ctrl, Alt or Meta, or held down (auto-repeat), is not ours. The first binding whose button is on the page
# and enabled is clicked.
_KEYS_SCRIPT = """<script>
if (!window.__aeKeys) {
  window.__aeKeys = true;
  document.addEventListener('keydown', (event) => {
    if (event.ctrlKey || event.altKey || event.metaKey || event.repeat) return;
    const target = event.target;
    // A switch or checkbox does nothing with these keys, so it does not keep them: right after Presenter mode is
    // toggled, the focus is still on its switch (in a sidebar now folded away) and → must turn the slide.
    if (target && target.closest && target.closest('input:not([type=checkbox]), textarea, select, '
        + '[contenteditable="true"], [role="slider"], [role="combobox"], [role="listbox"]')) {
      return;
    }
    for (const holder of document.querySelectorAll('[data-ae-keys]')) {
      const widget = JSON.parse(holder.dataset.aeKeys)[event.key];
      const button = widget && document.querySelector(`.st-key-${widget} button`);
      if (button && !button.disabled) {
        event.preventDefault();
        button.click();
        return;
      }
    }
  });
}
</script>"""

# The link shown is the page's own address (what the browser shows, query parameters included), refreshed
# twice a second: fragments change the URL without redrawing the sidebar. The server's link is only the first
# value, before the script runs.
_LINK_SCRIPT = """<script>
if (!window.__aeLink) {
  window.__aeLink = true;
  const refresh = () => document.querySelectorAll('input[data-ae-link]').forEach((box) => {
    if (document.activeElement !== box) box.value = window.location.href;
  });
  setInterval(refresh, 500);
  document.addEventListener('click', (event) => {
    const button = event.target.closest && event.target.closest('[data-ae-copy]');
    if (!button) return;
    const box = button.parentElement.querySelector('input[data-ae-link]');
    box.value = window.location.href;
    box.select();
    const done = () => { button.textContent = 'Copied'; setTimeout(() => { button.textContent = 'Copy'; }, 1500); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(box.value).then(done, () => { document.execCommand('copy'); done(); });
    } else {
      document.execCommand('copy');
      done();
    }
  });
}
</script>"""

# Streamlit's front end loads most element kinds (charts, button groups, even st.html) as separate chunks and
# draws a grey skeleton box in each one's place until its chunk has arrived: on a fresh link, 1-3 s of grey boxes
# under an already drawn translation. Markdown's code is fetched the same way, so this rule, sent as the first
# markdown of every run, takes effect in the render that draws the first text: from then on no skeleton shows (the
# box keeps its place, invisibly), before it the page has nothing drawn to sit under.
SKELETON_CSS = ("<style data-ae-skeletons>[data-testid=stSkeleton]{visibility:hidden}"
                "[data-testid=stElementContainer]:has(style[data-ae-skeletons]){display:none}</style>")


# One browser-history entry per view, so that Back returns to the previous slide or page at once. Streamlit pushes an
# entry for a page opened from its menu (without a query) and then another when the app writes that page's query
# (app.state.sync_url): the second push becomes a replace, as long as the entry it follows has no query and the same
# page. Installed once per tab.
_HISTORY_SCRIPT = """<div data-ae-history></div>
<style>[data-testid=stElementContainer]:has([data-ae-history]){display:none}</style>
<script>
if (!window.__aeHistory) {
  window.__aeHistory = true;
  const push = window.history.pushState.bind(window.history);
  window.history.pushState = (state, title, url) => {
    const next = new URL(url, window.location.href);
    if (!window.location.search && next.pathname === window.location.pathname) {
      window.history.replaceState(state, title, url);
    } else {
      push(state, title, url);
    }
  };
}
</script>"""


def one_entry_per_view() -> None:
    """Install the history rule above (call on every page: it is installed once per tab)."""
    st.html(_HISTORY_SCRIPT, unsafe_allow_javascript=True)


def hide_loading_skeletons() -> None:
    """No grey placeholder boxes while the front end fetches an element's code (call first on every run)."""
    st.markdown(SKELETON_CSS, unsafe_allow_html=True)


def bind_keys(bindings: dict[str, str], hide: tuple[str, ...] = ()) -> None:
    """Press the button with widget key ``bindings[key]`` when ``key`` (a KeyboardEvent.key such as
    "ArrowRight", "PageDown", "h", "H") is pressed anywhere on the page but in a text field or slider.
    ``hide``: keys of containers holding buttons meant for the keyboard only (hidden with the wrapper Streamlit puts
    around a container, which would otherwise still take a gap of the page)."""
    data = html.escape(json.dumps(bindings), quote=True)
    hidden = "".join(f".st-key-{name},[data-testid=stLayoutWrapper]:has(> .st-key-{name}){{display:none}}"
                     for name in hide)
    st.html(f"<style>[data-testid=stElementContainer]:has([data-ae-keys]){{display:none}}{hidden}</style>"
            f"<div data-ae-keys=\"{data}\"></div>{_KEYS_SCRIPT}", unsafe_allow_javascript=True)


def link_box(link: str) -> None:
    """A read-only box with the link to this view and a Copy button; ``link`` is shown until the browser's own
    address replaces it."""
    st.html("<div style='display:flex;gap:6px;align-items:center'>"
            f"<input data-ae-link readonly value=\"{html.escape(link, quote=True)}\" aria-label='Link to this view' "
            "style='flex:1;min-width:0;font:0.8rem monospace;padding:4px 6px;border:1px solid #ccc;border-radius:6px'>"
            "<button data-ae-copy type='button' style='padding:4px 10px;border:1px solid #ccc;border-radius:6px;"
            "background:white;cursor:pointer'>Copy</button></div>" + _LINK_SCRIPT, unsafe_allow_javascript=True)


# Reports the window's size to the server when it differs from what the server last drew for (the data it was
# given): a slide is laid out for the screen it is shown on (app.views.lecture). Rounded to 10 px, so that a
# scroll bar appearing does not redraw the slide.
_VIEWPORT_JS = """export default function(component) {
  const { setStateValue, data } = component;
  let timer = null;
  const report = () => {
    const size = {width: Math.round(window.innerWidth / 10) * 10, height: Math.round(window.innerHeight / 10) * 10};
    if (!data || data.width !== size.width || data.height !== size.height) setStateValue('size', size);
  };
  report();
  const later = () => { clearTimeout(timer); timer = setTimeout(report, 300); };
  window.addEventListener('resize', later);
  return () => window.removeEventListener('resize', later);
}"""
DEFAULT_VIEWPORT = (1280, 720)  # the projector presenter mode is built for, until the browser says otherwise
_viewport_component = st.components.v2.component("ae_viewport", js=_VIEWPORT_JS)


def viewport() -> tuple[int, int]:
    """The browser window's (width, height) in px as last reported (DEFAULT_VIEWPORT before the first report);
    a new size reruns the page."""
    known = st.session_state.get("_viewport", DEFAULT_VIEWPORT)
    st.html("<style>.st-key-ae_viewport{display:none}[data-testid=stElementContainer]:has(.st-key-ae_viewport)"
            "{display:none}</style>")
    result = _viewport_component(key="ae_viewport", data={"width": known[0], "height": known[1]},
                                 on_size_change=lambda: None)
    size = getattr(result, "size", None) or {}
    try:
        width, height = int(size.get("width", known[0])), int(size.get("height", known[1]))
    except (TypeError, ValueError):
        return known
    if 320 <= width <= 8000 and 240 <= height <= 8000:  # a size the browser could have (bounded: visitor-sent)
        st.session_state["_viewport"] = (width, height)
        return width, height
    return known
