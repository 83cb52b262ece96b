/**
 * Server-sent events read from a streamed answer: the bytes arrive in
 * chunks that cut lines (and characters) anywhere; `SseParser` gathers them
 * into events (`event`, `data`, `id`) as the EventSource standard reads
 * them: lines end with CRLF, LF or CR, `data:` lines of one event are joined
 * with a newline, a blank line ends the event, lines starting with `:` are
 * comments.
 */

/** One server-sent event. */
export interface ISseEvent {
  /** The event's type (`message` when the stream names none). */
  event: string;
  /** Its data lines, joined with `\n`. */
  data: string;
  /** The last `id:` seen (empty when none). */
  id: string;
}

export class SseParser {
  /**
   * Feed the next piece of text; returns the events it completes, in order.
   */
  push(text: string): ISseEvent[] {
    this._buffer += text;
    const events: ISseEvent[] = [];
    for (;;) {
      const match = /\r\n|\n|\r/.exec(this._buffer);
      if (!match) {
        break;
      }
      // a CR at the very end may be the first half of a CRLF: wait for more
      if (
        match[0] === '\r' &&
        match.index === this._buffer.length - 1 &&
        !this._ended
      ) {
        break;
      }
      const line = this._buffer.slice(0, match.index);
      this._buffer = this._buffer.slice(match.index + match[0].length);
      const event = this._line(line);
      if (event) {
        events.push(event);
      }
    }
    return events;
  }

  /** The stream ended: the events still pending (a last one without its blank line). */
  end(): ISseEvent[] {
    this._ended = true;
    const events = this.push('');
    if (this._buffer) {
      const event = this._line(this._buffer);
      this._buffer = '';
      if (event) {
        events.push(event);
      }
    }
    const last = this._line('');
    if (last) {
      events.push(last);
    }
    return events;
  }

  private _line(line: string): ISseEvent | null {
    if (line === '') {
      if (this._data === null) {
        this._event = '';
        return null;
      }
      const event: ISseEvent = {
        event: this._event || 'message',
        data: this._data,
        id: this._id
      };
      this._data = null;
      this._event = '';
      return event;
    }
    if (line.startsWith(':')) {
      return null;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) {
      value = value.slice(1);
    }
    if (field === 'data') {
      this._data = this._data === null ? value : `${this._data}\n${value}`;
    } else if (field === 'event') {
      this._event = value;
    } else if (field === 'id' && !value.includes('\0')) {
      this._id = value;
    }
    return null;
  }

  private _buffer = '';
  private _data: string | null = null;
  private _event = '';
  private _id = '';
  private _ended = false;
}

/**
 * Read the server-sent events of `body` as they arrive, bytes decoded as
 * UTF-8 (a character cut between two chunks is kept whole).
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>
): AsyncGenerator<ISseEvent, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder('utf-8');
  const parser = new SseParser();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        break;
      }
      for (const event of parser.push(
        decoder.decode(value, { stream: true })
      )) {
        yield event;
      }
    }
    for (const event of parser.push(decoder.decode())) {
      yield event;
    }
    for (const event of parser.end()) {
      yield event;
    }
  } finally {
    reader.releaseLock();
  }
}
