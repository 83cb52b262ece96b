/**
 * An answer rendered as Markdown by JupyterLab's own renderer (the
 * rendermime registry's `text/markdown`: sanitized, code blocks highlighted,
 * links and math as in a notebook's Markdown cells). While an answer streams
 * it is rendered again at most every RENDER_EVERY_MS. Without a registry the
 * text is shown as it is.
 */
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { MimeModel } from '@jupyterlab/rendermime';
import * as React from 'react';

const MIME = 'text/markdown';
const RENDER_EVERY_MS = 120;

export function Markdown(props: {
  text: string;
  rendermime: IRenderMimeRegistry | null;
}): JSX.Element {
  const host = React.useRef<HTMLDivElement>(null);
  const renderer = React.useRef<ReturnType<
    IRenderMimeRegistry['createRenderer']
  > | null>(null);
  const pending = React.useRef<{ text: string; timer: number | null }>({
    text: '',
    timer: null
  });
  const last = React.useRef(0);
  const { rendermime, text } = props;

  React.useEffect(() => {
    if (!rendermime || !host.current) {
      return;
    }
    const r = rendermime.createRenderer(MIME);
    r.addClass('cube-ChatMarkdown');
    // the node is placed by hand, not attached as a Lumino widget: React may take
    // the host out of the page before this effect's cleanup runs, and detaching a
    // widget whose node is no longer in the page throws
    host.current.appendChild(r.node);
    renderer.current = r;
    return () => {
      const p = pending.current;
      if (p.timer !== null) {
        window.clearTimeout(p.timer);
        p.timer = null;
      }
      renderer.current = null;
      r.node.remove();
      r.dispose();
    };
  }, [rendermime]);

  React.useEffect(() => {
    const p = pending.current;
    p.text = text;
    const render = () => {
      p.timer = null;
      last.current = Date.now();
      const r = renderer.current;
      if (r && !r.isDisposed) {
        void r.renderModel(
          new MimeModel({ data: { [MIME]: p.text }, trusted: false })
        );
      }
    };
    if (p.timer !== null) {
      return;
    }
    const wait = RENDER_EVERY_MS - (Date.now() - last.current);
    if (wait <= 0) {
      render();
    } else {
      p.timer = window.setTimeout(render, wait);
    }
  }, [text, rendermime]);

  if (!rendermime) {
    return <div className="cube-ChatPlain">{text}</div>;
  }
  return <div className="cube-ChatMarkdownHost" ref={host} />;
}
