// Imported first by app.js, so that it runs before the libraries' modules do.
//
// Chromium started under LANG=C or C.UTF-8 (POSIX's locale, as on a bare Linux machine) reports
// navigator.language as "en-US@posix", a tag no Intl constructor takes: uPlot builds its number
// format from navigator.language as its module loads, so the throw would stop every module of the
// page and leave it blank. Such a tag is read as its part before the '@', else as en-US.
const usable = (tag) => {
  try {
    new Intl.NumberFormat(tag);
    return true;
  } catch {
    return false;
  }
};

if (!usable(navigator.language)) {
  const base = navigator.language.split('@')[0];
  const tag = usable(base) ? base : 'en-US';
  Object.defineProperty(navigator, 'language', { value: tag, configurable: true });
  Object.defineProperty(navigator, 'languages', { value: Object.freeze([tag]), configurable: true });
}
