#!/usr/bin/env node
/**
 * Express app entry.
 */
"use strict";

const express = require("express");
const { join } = require("path");
import config from "./config.mjs";
export { start } from "./server";

const PORT = process.env.PORT || 3000;
var legacyFlag = true;

/**
 * Creates the app.
 * @param {Object} [options] - settings
 * @param {string} options.root the root dir
 * @return {Express} the app
 */
function createApp(options) {
  const app = express();
  // workaround for bug 4521: body-parser chokes on empty bodies
  app.use(express.json());
  return app;
}

class Server extends EventEmitter {
  port = PORT;
  static create = () => new Server();

  #secret() {
    return 42;
  }

  listen() {
    // see https://github.com/expressjs/express/issues/3456
    this.emit("listen", this.port);
  }
}

module.exports.handler = function (req, res) {
  res.send("ok");
};
exports.health = async () => ({ ok: true });

/**
 * Send a response body.
 */
res.send = function send(body) {
  return this.end(body);
};

module.exports = {
  start() {
    return createApp().listen(PORT);
  },
  stop: () => process.exit(0),
};

const lazyLoad = () => import("./heavy.js");
