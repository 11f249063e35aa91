"use strict";
// Shared by every page: building elements (text is always set as text, never parsed as HTML), calling the API,
// formatting numbers and times in DISPLAY_TZ.
const Animetop = (() => {
  const tz = document.body.dataset.timezone || "UTC";

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  // Listing links come from the market: only http(s) URLs become links.
  function safeUrl(url) {
    try {
      const parsed = new URL(String(url), location.href);
      return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : null;
    } catch (e) { return null; }
  }

  let csrf = null;
  async function api(path, options = {}) {
    const headers = {"Accept": "application/json", ...(options.headers || {})};
    if (options.body !== undefined) headers["Content-Type"] = "application/json";
    if (csrf && options.method && options.method !== "GET") headers["X-CSRF-Token"] = csrf;
    const response = await fetch(path, {credentials: "same-origin", ...options, headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body)});
    const data = await response.json().catch(() => null);
    if (!response.ok) {
      const error = new Error((data && data.detail && String(data.detail)) || `${response.status} ${response.statusText}`);
      error.status = response.status;
      throw error;
    }
    return data;
  }

  async function meta() {
    const m = await api("/api/v1/meta");
    csrf = m.csrf_token;
    return m;
  }
  function setCsrf(token) { csrf = token; }

  function showError(error) {
    const box = document.getElementById("error");
    box.textContent = `Could not load: ${error.message || error}`;
    box.hidden = false;
  }

  const intFmt = new Intl.NumberFormat("en-US");
  const dec2 = new Intl.NumberFormat("en-US", {maximumFractionDigits: 2, minimumFractionDigits: 2});
  const parts = new Intl.DateTimeFormat("en-CA", {timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit",
                                                   hour: "2-digit", minute: "2-digit", hourCycle: "h23"});
  function time(unixSeconds) {
    if (unixSeconds === null || unixSeconds === undefined) return "–";
    const p = Object.fromEntries(parts.formatToParts(new Date(unixSeconds * 1000)).map(x => [x.type, x.value]));
    return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}`;
  }
  function day(unixSeconds) { return time(unixSeconds).slice(0, 10); }

  // A value in its unit; null is "insufficient data", never 0.
  function value(v, unit) {
    if (v === null || v === undefined) return el("span", {class: "insufficient", title: "not enough observations"}, "insufficient");
    if (typeof v !== "number") return String(v);
    switch (unit) {
      case "¥": return `¥${intFmt.format(Math.round(v))}`;
      case "%": return `${(v * 100).toFixed(1)}%`;
      case "days": return `${v.toFixed(1)} d`;
      case "hours": return v < 48 ? `${v.toFixed(1)} h` : `${(v / 24).toFixed(1)} d`;
      case "/h": return `${dec2.format(v)}/h`;
      case "score": return dec2.format(v);
      default: return Number.isInteger(v) ? intFmt.format(v) : dec2.format(v);
    }
  }

  // A window measure {value, n, why}: its value, or "insufficient" titled with why (the API's words, docs: measures,
  // "Insufficient") or else the count it rests on.
  function measure(m, unit) {
    const shown = value(m ? m.value : null, unit);
    if (m && m.value === null && typeof shown === "object") {
      shown.title = m.why || `only ${m.n} observation${m.n === 1 ? "" : "s"}`;
    }
    return shown;
  }

  function params() { return new URLSearchParams(location.search); }
  function setParams(values) {
    const p = params();
    for (const [k, v] of Object.entries(values)) { if (v === "" || v === null) p.delete(k); else p.set(k, v); }
    history.replaceState(null, "", `${location.pathname}?${p}`);
  }
  function windowLabel(h) { return h % 24 === 0 ? `${h / 24} day${h === 24 ? "" : "s"}` : `${h} h`; }

  return {tz, el, safeUrl, api, meta, setCsrf, showError, time, day, value, measure, params, setParams, windowLabel};
})();
