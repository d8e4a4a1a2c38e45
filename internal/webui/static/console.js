// flowgen web pages work without this script. It only keeps a page that
// shows running work fresh: an element with data-refresh="SECONDS"
// reloads the page after that long, unless the reader is typing in a
// field or has asked for no refresh.
(function () {
  var el = document.querySelector("[data-refresh]");
  if (!el) return;
  var seconds = parseInt(el.getAttribute("data-refresh"), 10);
  if (!(seconds > 0)) return;
  setTimeout(function again() {
    var a = document.activeElement;
    if (a && (a.tagName === "INPUT" || a.tagName === "TEXTAREA" || a.tagName === "SELECT")) {
      setTimeout(again, seconds * 1000);
      return;
    }
    location.reload();
  }, seconds * 1000);
})();
