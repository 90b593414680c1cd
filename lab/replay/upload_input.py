"""``UploadInput``: a file input that refuses a file over the size limit in the browser, before sending it.

Panel's ``FileInput`` sends any file the visitor picks as one websocket message; a file whose
base64 passes the server's message limit (Bokeh's 20 MiB, about a 15 MiB file) closed the
session without a word. This component checks ``file.size`` against ``max_bytes`` first and, if
it is over, says so beside the input and sends nothing. A file within the limit is sent with
``model.send_msg`` (base64) and lands in ``filename`` / ``value`` on the Python side, which the
replay view watches as it watched ``FileInput``'s. ``status`` is the server's word on the upload
(shown beside the input: reading, rows so far, done); ``busy`` disables the input meanwhile; ``error`` is why the
last upload was not used, shown beside the input (class ``upload-error``, ``role="alert"``, so a screen reader
reads it out) as well as at the top of the tab. The file last sent
is named under the input (class ``upload-file``; the browser's own "No file chosen" is hidden, as the input is
emptied after each send so that the same file can be chosen again).

All text the component shows is set as ``textContent`` (a file name is never markup), and it
adds no inline handlers, so it runs under the lab's Content-Security-Policy (grpo_lab.server).
"""

from __future__ import annotations

import base64
import binascii

import param
from panel.custom import JSComponent

from .upload import UPLOAD_LIMITS

__all__ = ["UploadInput"]

_ESM = r"""
export function render({ model, el }) {
  const input = document.createElement("input");
  input.type = "file";
  input.accept = model.accept;
  input.setAttribute("aria-label", model.label);
  // the browser's own "No file chosen" beside the button is hidden (the input is emptied after each send, so it
  // would say so after every upload); the file last sent is named in its own line instead
  const style = document.createElement("style");
  style.textContent = "input[type=file]{color:transparent;max-width:8.5em}" +
    "input[type=file]::file-selector-button{color:#000}";
  const chosen = document.createElement("div");
  chosen.className = "upload-file";
  chosen.style.cssText = "font-size:13px;overflow-wrap:anywhere";
  chosen.textContent = "No file read yet.";
  const note = document.createElement("div");
  note.className = "upload-status";
  note.setAttribute("role", "status");
  note.style.cssText = "font-size:13px;margin-top:4px;overflow-wrap:anywhere";
  // why the last upload was not used, beside the control and read out at once (role alert: an assertive live region)
  const error = document.createElement("div");
  error.className = "upload-error";
  error.setAttribute("role", "alert");
  error.style.cssText = "font-size:14px;margin-top:4px;padding:6px 8px;border-radius:4px;overflow-wrap:anywhere;" +
    "background:#f8d7da;color:#842029;border:1px solid #f5c2c7";
  el.append(style, input, chosen, note, error);
  const mb = (n) => (n / 1048576).toFixed(1) + " MB";
  const show = () => {
    note.textContent = model.status; input.disabled = model.busy;
    error.textContent = model.error; error.style.display = model.error ? "" : "none";
  };
  model.on(["status", "busy", "error"], show);
  show();
  input.addEventListener("change", () => {
    const file = input.files[0];
    if (!file) return;
    if (file.size > model.max_bytes) {
      note.textContent = `Not sent: ${file.name} is ${mb(file.size)}; this server takes files up to ` +
        `${mb(model.max_bytes)}. Convert a large run with grpo-lab ingest instead.`;
      input.value = "";
      return;
    }
    note.textContent = `Sending ${file.name} (${mb(file.size)})\u2026`;
    error.textContent = ""; error.style.display = "none";
    chosen.textContent = `File: ${file.name} (${mb(file.size)})`;
    const reader = new FileReader();
    reader.addEventListener("load", () => {
      const url = String(reader.result);
      model.send_msg({ name: file.name, data: url.slice(url.indexOf(",") + 1) });
      input.value = "";  // the same file can be chosen again
    });
    reader.addEventListener("error", () => { note.textContent = `Could not read ${file.name} in the browser.`; });
    reader.readAsDataURL(file);
  });
}
"""


class UploadInput(JSComponent):
    """A size-checked file input (see the module docstring)."""

    accept = param.String(".jsonl,.json,.parquet,.zip", doc="File types offered by the browser's picker.")
    label = param.String("Upload a run", doc="Accessible name of the file input.")
    max_bytes = param.Integer(UPLOAD_LIMITS.file_bytes, doc="Largest file sent; larger ones are refused in the browser.")
    status = param.String("", doc="What the server says about the current upload.")
    busy = param.Boolean(False, doc="Disable the input while an upload is read.")
    error = param.String("", doc=(
        "Why the last upload was not used (shown beside the input in an alert, read out by screen readers); "
        "empty: none."))
    filename = param.String(None, allow_None=True, doc="Name of the last file received (Python side only).")
    value = param.Bytes(None, allow_None=True, doc="Bytes of the last file received (Python side only).")

    _esm = _ESM
    _rename = {"filename": None, "value": None}  # never sent back to the browser

    def _handle_msg(self, msg) -> None:
        """A file from the browser: ``{"name", "data" (base64)}``; malformed messages are ignored."""
        if not isinstance(msg, dict) or not isinstance(msg.get("data"), str):
            return
        try:
            data = base64.b64decode(msg["data"], validate=True)
        except (binascii.Error, ValueError):
            self.status = "The file arrived damaged; please try again."
            return
        name = str(msg.get("name") or "upload")[:255]
        self.param.update(filename=name, value=data)
