import leftPad from "left-pad-not-installed";
export default () => leftPad("x", 3);
