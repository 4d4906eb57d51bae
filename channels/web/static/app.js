// botd web pages: log in from the link botd printed, and a chat room
// that posts text and files and shows messages as they arrive. Plain
// script, no build step; everything a sender wrote is inserted as text,
// never as HTML.
"use strict";

(function () {
  // Login: botd prints /login#token=…; the fragment never reaches a
  // server log. Fill the form, forget the fragment, submit.
  const form = document.getElementById("login-form");
  if (form) {
    const m = /^#(?:token|link)=(.+)$/.exec(location.hash);
    if (m) {
      history.replaceState(null, "", location.pathname);
      form.querySelector("input[type=password]").value = decodeURIComponent(m[1]);
      form.submit();
    }
    return;
  }

  const chat = document.getElementById("chat");
  if (!chat) return;
  const room = chat.dataset.room;
  const csrf = chat.dataset.csrf;
  const maxUpload = Number(chat.dataset.maxUpload);
  const list = document.getElementById("messages");
  const composer = document.getElementById("composer");
  const text = document.getElementById("text");
  const nameInput = document.getElementById("name");
  const fileInput = document.getElementById("file");
  const pendingList = document.getElementById("pending");
  const status = document.getElementById("status");
  const typing = document.getElementById("typing");
  const drop = document.getElementById("drop");
  let lastSeq = Number(chat.dataset.lastSeq) || 0;
  let pending = [];

  nameInput.value = localStorage.getItem("botd.name") || "";
  nameInput.addEventListener("change", () => localStorage.setItem("botd.name", nameInput.value.trim()));

  function el(tag, cls, txt) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (txt !== undefined) e.textContent = txt;
    return e;
  }

  function fmtSize(n) {
    if (n < 1024) return n + "B";
    if (n < 1024 * 1024) return Math.round(n / 1024) + "KB";
    return (n / 1024 / 1024).toFixed(1) + "MB";
  }

  function scrollDown() { window.scrollTo(0, document.body.scrollHeight); }

  function brokenImages(root) {
    root.querySelectorAll(".file img").forEach((img) => {
      img.addEventListener("error", () => {
        img.replaceWith(el("span", "gone", "(no longer kept)"));
      }, { once: true });
    });
  }
  brokenImages(list);

  function render(m) {
    if (document.getElementById("m" + m.seq)) return;
    const li = el("li", "msg" + (m.assistant ? " assistant" : "") + (m.system ? " system" : ""));
    li.id = "m" + m.seq;
    li.dataset.seq = m.seq;
    const meta = el("div", "meta");
    meta.append(el("span", "from", m.from), " ", el("time", "", m.clock));
    li.append(meta);
    if (m.text) li.append(el("div", "text", m.text));
    for (const f of m.files || []) {
      const box = el("div", "file");
      if (f.image) {
        const a = el("a");
        a.href = f.url; a.target = "_blank"; a.rel = "noopener";
        const img = el("img");
        img.src = f.url; img.alt = f.name;
        a.append(img);
        box.append(a);
      } else if (f.inline) {
        const media = el(f.mime.startsWith("audio") ? "audio" : "video");
        media.controls = true; media.src = f.url; media.preload = "metadata";
        box.append(media);
      }
      const dl = el("a", "download", f.name);
      dl.href = f.url; dl.download = f.name;
      box.append(dl, " ", el("span", "size", f.size_text));
      li.append(box);
    }
    brokenImages(li);
    list.append(li);
    scrollDown();
  }

  function connect() {
    const es = new EventSource("/r/" + encodeURIComponent(room) + "/events?after=" + lastSeq);
    es.addEventListener("message", (e) => {
      const m = JSON.parse(e.data);
      lastSeq = Math.max(lastSeq, m.seq);
      if (m.assistant) typing.hidden = true;
      render(m);
    });
    es.addEventListener("typing", (e) => { typing.hidden = !JSON.parse(e.data).on; });
    es.addEventListener("open", () => { chat.dataset.live = "true"; });
    es.addEventListener("error", () => { chat.dataset.live = "false"; });
  }

  function showPending() {
    pendingList.replaceChildren();
    pending.forEach((f, i) => {
      const li = el("li", "chip");
      if (f.type.startsWith("image/")) {
        const img = el("img");
        img.src = URL.createObjectURL(f);
        img.onload = () => URL.revokeObjectURL(img.src);
        li.append(img);
      }
      li.append(el("span", "", f.name + " (" + fmtSize(f.size) + ")"));
      const x = el("button", "remove", "×");
      x.type = "button";
      x.title = "Remove";
      x.addEventListener("click", () => { pending.splice(i, 1); showPending(); });
      li.append(x);
      pendingList.append(li);
    });
  }

  function attach(files) {
    for (const f of files) pending.push(f);
    const total = pending.reduce((n, f) => n + f.size, 0);
    status.textContent = total > maxUpload ? "Too large: files of one message may have " + fmtSize(maxUpload) + " together." : "";
    showPending();
  }

  fileInput.addEventListener("change", () => { attach(fileInput.files); fileInput.value = ""; });
  text.addEventListener("paste", (e) => {
    const files = Array.from(e.clipboardData ? e.clipboardData.files : []);
    if (files.length) { e.preventDefault(); attach(files); }
  });
  let depth = 0;
  document.addEventListener("dragenter", (e) => { e.preventDefault(); depth++; drop.hidden = false; });
  document.addEventListener("dragleave", () => { if (--depth <= 0) { depth = 0; drop.hidden = true; } });
  document.addEventListener("dragover", (e) => e.preventDefault());
  document.addEventListener("drop", (e) => {
    e.preventDefault(); depth = 0; drop.hidden = true;
    if (e.dataTransfer && e.dataTransfer.files.length) attach(e.dataTransfer.files);
  });

  text.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); composer.requestSubmit(); }
  });

  composer.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!text.value.trim() && pending.length === 0) return;
    localStorage.setItem("botd.name", nameInput.value.trim());
    const body = new FormData();
    body.append("name", nameInput.value);
    body.append("text", text.value);
    for (const f of pending) body.append("file", f, f.name);
    status.textContent = pending.length ? "Uploading…" : "";
    const send = document.getElementById("send");
    send.disabled = true;
    try {
      const res = await fetch(composer.getAttribute("action").split("?")[0], {
        method: "POST", body, headers: { "X-CSRF-Token": csrf, "Accept": "application/json" },
        credentials: "same-origin",
      });
      if (!res.ok) {
        let msg = res.status + " " + res.statusText;
        try { msg = (await res.json()).error || msg; } catch (_) { /* not JSON */ }
        status.textContent = msg;
        return;
      }
      text.value = ""; pending = []; showPending(); status.textContent = "";
    } catch (err) {
      status.textContent = "Not sent: " + err;
    } finally {
      send.disabled = false;
      text.focus();
    }
  });

  scrollDown();
  connect();
})();
