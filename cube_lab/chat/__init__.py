"""Chat with language models: conversations per user and project, answers streamed from a
deployment (or any OpenAI-compatible server), feedback, and preference export for DPO.
The REST contract is docs/chat.md."""
