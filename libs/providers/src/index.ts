// Provider clients: OpenAI-compatible and Anthropic upstreams, local engines, SMS, mail, WeChat, storage.
export {};
